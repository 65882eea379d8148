# Why one module over 450 lines: it is the table of worker settings itself, one define with
# its documentation per key, in the order of the generated reference; no logic to split out.
"""The worker configuration keys (Kafka Connect's names): :data:`WORKER_CONFIG_DEF`.

Bootstrap servers and converters, offset/config/status storage, REST listeners and
authentication, the control topic, the built-in schema registry, config providers, the client
override policy and topic creation. The key order is the order of the generated configuration
reference. The definition is built at import time and read-only afterwards: safe to share
across threads. The parsed, typed form is :class:`connectrt.runtime.config.worker.WorkerConfig`.
"""

from __future__ import annotations

from connectrt.api.config import ConfigDef, ConfigType, Importance, Range, ValidString
from connectrt.converters.registry_config import COMPATIBILITY_LEVELS
from connectrt.runtime.clients.settings import check_allowlist, check_policy_name
from connectrt.runtime.config.lineage import LINEAGE_CONFIG_DEF
from connectrt.runtime.config.standby import WORKER_STANDBY_CONFIG_DEF
from connectrt.runtime.config.task_limits import WORKER_TASK_LIMITS_CONFIG_DEF
from connectrt.runtime.config.tracing import TRACING_CONFIG_DEF
from connectrt.runtime.plugins.version_config import WORKER_VERSION_CONFIG_DEF

__all__ = ["SIMPLE_HEADER_CONVERTER", "WORKER_CONFIG_DEF"]

SIMPLE_HEADER_CONVERTER = "org.apache.kafka.connect.storage.SimpleHeaderConverter"

_WORKER_KEYS = (
    ConfigDef()
    .define(
        "bootstrap.servers",
        ConfigType.LIST,
        "localhost:9092",
        None,
        Importance.HIGH,
        "Kafka brokers to connect to (host:port list).",
    )
    .define(
        "key.converter",
        ConfigType.CLASS,
        None,
        None,
        Importance.HIGH,
        "Converter for record keys. Kafka requires it; connectrt defaults to JsonConverter.",
    )
    .define(
        "value.converter",
        ConfigType.CLASS,
        None,
        None,
        Importance.HIGH,
        "Converter for record values. Kafka requires it; connectrt defaults to JsonConverter.",
    )
    .define(
        "header.converter",
        ConfigType.CLASS,
        SIMPLE_HEADER_CONVERTER,
        None,
        Importance.LOW,
        "Converter for header values.",
    )
    .define(
        "offset.storage.type",
        ConfigType.STRING,
        "kafka",
        ValidString.of("kafka", "file", "memory"),
        Importance.MEDIUM,
        "Where source offsets are stored: 'kafka' (the offset.storage.topic, default), "
        "'file' (offset.storage.file.filename) or 'memory' (lost at exit; tests only).",
    )
    .define(
        "offset.storage.topic",
        ConfigType.STRING,
        "connect-offsets",
        None,
        Importance.HIGH,
        "Compacted topic holding source connector offsets (created if absent).",
    )
    .define(
        "offset.storage.partitions",
        ConfigType.INT,
        25,
        Range.at_least(1),
        Importance.LOW,
        "Partitions of the offsets topic when connectrt creates it.",
    )
    .define(
        "offset.storage.replication.factor",
        ConfigType.SHORT,
        -1,
        None,
        Importance.LOW,
        "Replication factor of the offsets topic when created; -1 = broker default "
        "(Kafka Connect's default is 3).",
    )
    .define(
        "offset.storage.file.filename",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "File for offsets when offset.storage.type=file.",
    )
    .define(
        "offset.flush.interval.ms",
        ConfigType.LONG,
        60000,
        Range.at_least(0),
        Importance.LOW,
        "How often source offsets and sink consumer offsets are committed.",
    )
    .define(
        "offset.flush.timeout.ms",
        ConfigType.LONG,
        5000,
        Range.at_least(0),
        Importance.LOW,
        "How long a commit waits for outstanding records to be acknowledged before it is "
        "skipped and retried at the next interval.",
    )
    .define(
        "worker.startup.timeout.ms",
        ConfigType.LONG,
        30000,
        Range.at_least(100),
        Importance.LOW,
        "connectrt: how long the worker waits for Kafka at start (and for an internal topic "
        "read to make progress) before failing with a clear error.",
    )
    .define(
        "task.shutdown.graceful.timeout.ms",
        ConfigType.LONG,
        5000,
        Range.at_least(0),
        Importance.LOW,
        "How long stop waits for tasks to finish and commit, and for a connector's stop(). A "
        "task or connector still stopping then is abandoned (a task process is killed) and "
        "the stop goes on without it.",
    )
    .define(
        "connector.call.timeout.ms",
        ConfigType.LONG,
        60000,
        Range.at_least(0),
        Importance.LOW,
        "connectrt: how long management waits for a connector's start() and task_configs(), "
        "and for the validation of a config on create and update, before giving up: the "
        "connector is reported FAILED with a timeout message (a validation answers 500) and "
        "the call is abandoned, so a request never waits longer on plugin code.",
    )
    .define(
        "task.executor",
        ConfigType.STRING,
        "threads",
        ValidString.of("threads", "processes", "spark"),
        Importance.MEDIUM,
        "Where connector tasks run: 'threads' (threads of this worker process), 'processes' "
        "(an OS process per task on this machine: own core, own heap and memory limit, own "
        "crash domain) or 'spark' (long-running Spark tasks; `connectrt spark` sets it).",
    )
    .define(
        "exactly.once.source.support",
        ConfigType.STRING,
        "disabled",
        ValidString.of("disabled", "preparing", "enabled", case_insensitive=True),
        Importance.HIGH,
        "Exactly-once source support (KIP-618). 'enabled': every source task writes its "
        "records and their source offsets in one Kafka transaction (transactional.id "
        "'<group.id>-<connector>-<task>'), offsets are read read_committed, and the tasks of "
        "the previous generation are fenced before new ones start. 'preparing': the step of a "
        "rolling upgrade; tasks are still at-least-once. 'disabled': at-least-once.",
    )
    .define(
        "worker.memory.budget.mb",
        ConfigType.INT,
        64,
        Range.at_least(0),
        Importance.MEDIUM,
        "connectrt: memory (MiB) the Kafka clients of the worker's tasks may buffer, divided "
        "evenly among its tasks (by at least 4): each source task's producer queue and each "
        "sink task's prefetch are sized from its share. Explicit producer.*/consumer.* and "
        "connector *.override.* settings win; 0 turns the budget off.",
    )
    .define(
        "plugin.path",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Directories searched for plugin modules (added to sys.path). They are scanned when "
        "the worker starts: a module added later is not a plugin until the next start.",
    )
    .define(
        "plugin.packages",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "connectrt: Python packages (such as my_company.connectors) whose classes a config may "
        "name by Python path (connector.class, converters, transforms.*.type, "
        "predicates.*.type) without being discovered plugins. Empty by default: only "
        "plugins are loaded (bundled, registered through entry points, or found in a "
        "plugin.path directory); a class outside them is refused with a 400 and never "
        "imported.",
    )
    .define(
        "file.connectors.allowed.dirs",
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "connectrt: directories the bundled FileStreamSource may read and FileStreamSink may "
        "write (files in them or below; relative entries are relative to the worker's working "
        "directory). Empty by default: the file connectors may only use standard input and "
        "output. Whatever this allows, the sink never writes under a plugin.path directory, "
        "nor a file Python could import under a sys.path entry.",
    )
    .define(
        "listeners",
        ConfigType.LIST,
        "http://:8083",
        None,
        Importance.LOW,
        "REST API listener (protocol://host:port; the first one is served, an empty host "
        "means all interfaces).",
    )
    .define(
        "rest.advertised.host.name",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Host name reported as worker_id.",
    )
    .define(
        "rest.advertised.port",
        ConfigType.INT,
        None,
        None,
        Importance.LOW,
        "Port reported as worker_id.",
    )
    .define(
        "group.id",
        ConfigType.STRING,
        "connect-cluster",
        None,
        Importance.HIGH,
        "Identifies this worker's cluster in its internal topics (one live worker per group, "
        "or one leader and its standbys with standby.enable=true).",
    )
    .define(
        "config.storage.topic",
        ConfigType.STRING,
        "connect-configs",
        None,
        Importance.HIGH,
        "`connectrt worker`: compacted topic holding connector configs and target states.",
    )
    .define(
        "config.storage.replication.factor",
        ConfigType.SHORT,
        -1,
        None,
        Importance.LOW,
        "Replication factor of the config topic when created; -1 = broker default.",
    )
    .define(
        "status.storage.topic",
        ConfigType.STRING,
        "connect-status",
        None,
        Importance.HIGH,
        "`connectrt worker`: compacted topic holding connector and task states.",
    )
    .define(
        "status.storage.partitions",
        ConfigType.INT,
        5,
        Range.at_least(1),
        Importance.LOW,
        "Partitions of the status topic when connectrt creates it.",
    )
    .define(
        "status.storage.replication.factor",
        ConfigType.SHORT,
        -1,
        None,
        Importance.LOW,
        "Replication factor of the status topic when created; -1 = broker default.",
    )
    .define(
        "topic.tracking.enable",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Record the topics each connector uses (GET /connectors/{name}/topics).",
    )
    .define(
        "topic.tracking.allow.reset",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Allow PUT /connectors/{name}/topics/reset.",
    )
    .define(
        "rest.auth.type",
        ConfigType.STRING,
        "none",
        ValidString.of("none", "basic", "bearer"),
        Importance.MEDIUM,
        "Authentication of the REST API and the built-in schema registry: none, basic "
        "(rest.auth.credentials.file) or bearer (rest.auth.tokens.file).",
    )
    .define(
        "rest.auth.credentials.file",
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Lines user:pbkdf2_sha256$... (see `connectrt auth hash-password`).",
    )
    .define(
        "rest.auth.tokens.file",
        ConfigType.STRING,
        None,
        None,
        Importance.MEDIUM,
        "Lines sha256:<hex> of accepted bearer tokens (see `connectrt auth hash-token`).",
    )
    .define(
        "rest.auth.health.open",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Serve GET /health without authentication.",
    )
    # -- listener hardening (REST API and built-in schema registry alike) --------------------
    .define(
        "rest.auth.cache.ttl.ms",
        ConfigType.LONG,
        60000,
        Range.at_least(0),
        Importance.LOW,
        "How long a successful credential check is remembered, keyed by a SHA-256 of the "
        "Authorization header (at most 1024 entries); an entry is dropped as soon as the "
        "password or token it matched is no longer configured. 0 checks every request.",
    )
    .define(
        "rest.auth.failure.delay.max.ms",
        ConfigType.LONG,
        2000,
        Range.at_least(0),
        Importance.LOW,
        "Failures slow down the failing credentials, counted per user name (all bearer "
        "tokens count as one): a user's second wrong password is answered 401 after 100 ms, "
        "each further one after twice as long, up to this bound; 60 s without failures clear "
        "the count. A correct password is checked and answered at once, whatever failed "
        "before it and from wherever. Checks run off the event loop on a small dedicated "
        "thread pool. 0 disables the delay.",
    )
    .define(
        "rest.request.max.bytes",
        ConfigType.LONG,
        4 * 1024 * 1024,
        Range.at_least(1),
        Importance.LOW,
        "Largest request body the REST API and the built-in schema registry accept (declared "
        "by Content-Length, or counted while a body without it is received); larger requests "
        "get HTTP 413.",
    )
    .define(
        "rest.request.body.timeout.ms",
        ConfigType.LONG,
        30000,
        Range.at_least(1),
        Importance.LOW,
        "How long a request body may take to arrive, from the start of the request, on the REST "
        "API and the built-in schema registry; a client that declares a longer body than it "
        "sends, or sends it too slowly, gets HTTP 408 and the connection is closed.",
    )
    .define(
        "access.control.allow.origin",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "Value to set the Access-Control-Allow-Origin header to for REST API requests: a "
        "comma-separated list of origins (scheme://host:port, '*' for any) whose web pages may "
        "use the API. The default only allows the worker's own origin. Beyond Kafka Connect, "
        "a POST, PUT, PATCH or DELETE whose Origin header is neither the worker's own origin "
        "nor listed here (or whose method is not in access.control.allow.methods) is refused "
        "with HTTP 403.",
    )
    .define(
        "access.control.allow.methods",
        ConfigType.STRING,
        "",
        None,
        Importance.LOW,
        "Sets the methods supported for cross origin requests by setting the "
        "Access-Control-Allow-Methods header. The default value allows cross origin requests "
        "for GET, POST and HEAD.",
    )
    .define(
        "listeners.https.ssl.certificate.location",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "PEM certificate (chain) for an https:// listener.",
    )
    .define(
        "listeners.https.ssl.key.location",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "PEM private key for an https:// listener.",
    )
    .define(
        "control.topic",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Optional topic of JSON control events (STOP, PAUSE, RESUME, RESTART, RESET_TO_*).",
    )
    .define(
        "schema.registry.enable",
        ConfigType.BOOLEAN,
        False,
        None,
        Importance.MEDIUM,
        "Serve the built-in Confluent-compatible schema registry (schemas in a Kafka topic).",
    )
    .define(
        "schema.registry.listener",
        ConfigType.STRING,
        None,
        None,
        Importance.LOW,
        "Listener of the built-in schema registry (protocol://host:port); point converters' "
        "schema.registry.url here. Default: the protocol and host of the REST listener (the "
        "first of listeners) on port 8081. It is served with the REST API's authentication "
        "(rest.auth.*, no open path) and, for https, its certificate.",
    )
    .define(
        "schema.registry.topic",
        ConfigType.STRING,
        "_schemas",
        None,
        Importance.LOW,
        "Compacted topic holding the built-in registry's schemas.",
    )
    .define(
        "schema.registry.topic.replication.factor",
        ConfigType.SHORT,
        -1,
        None,
        Importance.LOW,
        "Replication factor of the schemas topic when created; -1 = broker default.",
    )
    .define(
        "schema.registry.compatibility",
        ConfigType.STRING,
        "BACKWARD",
        ValidString.of(*COMPATIBILITY_LEVELS),
        Importance.LOW,
        "Default compatibility level of the built-in registry.",
    )
    .define(
        "config.providers",
        ConfigType.LIST,
        "",
        None,
        Importance.LOW,
        "Config provider names; each needs config.providers.<name>.class (file, directory, "
        "env built in) and optional config.providers.<name>.param.* settings.",
    )
    .define(
        "connector.client.config.override.policy",
        ConfigType.STRING,
        "All",
        check_policy_name,
        Importance.MEDIUM,
        "Which producer/consumer/admin.override.* keys connectors may set: 'All' (any), "
        "'None' (none), 'Principal' (sasl.jaas.config, sasl.mechanism, security.protocol; "
        "deprecated) or 'Allowlist' (KIP-1188: those in "
        "connector.client.config.override.allowlist; Kafka's default from 5.0). Kafka's policy "
        "class names are accepted too.",
    )
    .define(
        "connector.client.config.override.allowlist",
        ConfigType.LIST,
        "",
        check_allowlist,
        Importance.MEDIUM,
        "With the Allowlist policy: the client settings (without the producer.override. etc. "
        "prefix, e.g. linger.ms) connectors may override. Empty: none.",
    )
    .define(
        "connector.client.config.override.allowed.urls",
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "URLs a connector's client overrides may make the worker fetch "
        "(sasl.oauthbearer.token.endpoint.url; Azure IMDS metadata authentication), matched "
        "exactly, whatever the override policy (Kafka 4.0's "
        "org.apache.kafka.sasl.oauthbearer.allowed.urls). Empty: none. The worker file's own "
        "producer./consumer./admin. settings are not limited.",
    )
    .define(
        "connector.client.config.override.allowed.directories",
        ConfigType.LIST,
        "",
        None,
        Importance.MEDIUM,
        "Directories under which a connector's client overrides may name files the worker "
        "reads (ssl.ca.location, ssl.key.location, ssl.certificate.location, "
        "ssl.keystore.location, ssl.crl.location, https.ca.location, sasl.kerberos.keytab, "
        "OIDC assertion files), symbolic links resolved, whatever the override policy. Empty: "
        "none. Commands, libraries and callbacks (sasl.kerberos.kinit.cmd, "
        "plugin.library.paths, ssl.engine.location, ssl.providers, *_cb...) are never allowed "
        "in connector overrides.",
    )
    .define(
        "topic.creation.enable",
        ConfigType.BOOLEAN,
        True,
        None,
        Importance.LOW,
        "Allow source connectors to create topics with topic.creation.* settings.",
    )
)

WORKER_CONFIG_DEF = _WORKER_KEYS.merge(WORKER_VERSION_CONFIG_DEF)  # KIP-891: converter versions
WORKER_CONFIG_DEF = WORKER_CONFIG_DEF.merge(WORKER_TASK_LIMITS_CONFIG_DEF)  # stall, rate limits
WORKER_CONFIG_DEF = WORKER_CONFIG_DEF.merge(WORKER_STANDBY_CONFIG_DEF)  # standby workers (HA)
WORKER_CONFIG_DEF = WORKER_CONFIG_DEF.merge(LINEAGE_CONFIG_DEF)  # OpenLineage run events
WORKER_CONFIG_DEF = WORKER_CONFIG_DEF.merge(TRACING_CONFIG_DEF)  # OpenTelemetry tracing
