"""Bundled FileStream connectors (Kafka Connect's file source and sink)."""

from connectors.file.sink import FileStreamSinkConnector, FileStreamSinkTask
from connectors.file.source import FileStreamSourceConnector, FileStreamSourceTask

__all__ = [
    "FileStreamSinkConnector",
    "FileStreamSinkTask",
    "FileStreamSourceConnector",
    "FileStreamSourceTask",
]
