"""The life of one task around the plugin's code: runner thread, contexts, error tolerance.

Also the record transforms and the dead letter queue writer. The base that the source and sink
floors build on; it knows neither delivery mode.
"""
