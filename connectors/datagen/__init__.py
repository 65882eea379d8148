"""Datagen source connector: random records from Avro schemas with generation hints.

Compatible with the keys of Confluent's ``kafka-connect-datagen`` (quickstarts, schema files,
``arg.properties`` hints); see :mod:`connectors.datagen.source` and
:mod:`connectors.datagen.generators`.
"""

from connectors.datagen.source import DatagenConnector, DatagenTask

__all__ = ["DatagenConnector", "DatagenTask"]
