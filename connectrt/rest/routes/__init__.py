"""The REST API's routes, one :class:`~fastapi.APIRouter` per resource.

Each module builds its router from the app's shared state (the :class:`Herder`, and for
connector configs the :class:`~connectrt.rest.config_limits.ConfigLimits`); every route calls
one method of the herder or of one of its collaborators and shapes its answer, and errors are
raised for the app's exception handlers (:mod:`connectrt.rest.errors`) to answer:

* :mod:`.root`: ``/``, ``/health``, ``/metrics``;
* :mod:`.connectors`: ``/connectors`` and a connector's config, status, tasks, restart,
  pause/resume/stop and topics;
* :mod:`.offsets`: ``/connectors/{connector}/offsets`` (KIP-875) and connectrt's rewind;
* :mod:`.control`: ``/control/events`` (the control topic's outcomes);
* :mod:`.plugins`: ``/connector-plugins``, a plugin's config definition and validation;
* :mod:`.loggers`: ``/admin/loggers``;
* :mod:`.dlq`: connectrt's dead letter queue replay;
* :mod:`.tap`: connectrt's record inspector (server-sent events).

The web console (:mod:`connectrt.rest.console`) is a router of its own, outside the OpenAPI
document. Handlers are plain ``def`` functions unless they read a body: FastAPI runs them in
its thread pool, and the herder and its collaborators are thread-safe.
"""
