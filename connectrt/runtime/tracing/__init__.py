"""Record-level OpenTelemetry tracing of tasks: the task-side tracer pieces, the exporter
process that makes the spans, and its OTLP encoding and sending (see :mod:`.tracer`)."""
