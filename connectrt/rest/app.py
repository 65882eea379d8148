"""The FastAPI application: Kafka Connect's REST API over a :class:`Herder`.

:func:`create_app` builds what the routes share (the herder, the config limits), the
middleware and the error handlers (:mod:`connectrt.rest.errors`), and includes one router per
resource (:mod:`connectrt.rest.routes`) and the web console. Every route calls one method, of
the herder or of one of its collaborators, and shapes its answer; no logic lives here.
Authentication and cross-site write refusal are the listener's (:mod:`connectrt.listener`).
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from connectrt import __version__
from connectrt.rest.config_limits import ConfigLimits
from connectrt.rest.console import mount_console
from connectrt.rest.errors import install_error_handlers
from connectrt.rest.forwarding import LeaderForwarding
from connectrt.rest.openapi import document_api
from connectrt.rest.readiness import StartupGate
from connectrt.rest.responses import JSON
from connectrt.rest.routes.connectors import connectors_router
from connectrt.rest.routes.control import control_router
from connectrt.rest.routes.dlq import dlq_router
from connectrt.rest.routes.loggers import loggers_router
from connectrt.rest.routes.offsets import offsets_router
from connectrt.rest.routes.plugins import plugins_router
from connectrt.rest.routes.root import root_router
from connectrt.rest.routes.tap import tap_router
from connectrt.runtime.herder.herder import Herder

__all__ = ["create_app"]


def _config_limits(herder: Herder) -> ConfigLimits:
    """Configs are bounded by what the config topic takes; without one (standalone mode, or
    no herder when the app is built only for its OpenAPI document) they are not."""
    from connectrt.storage.kafka_config import KafkaConfigStore

    store = getattr(herder, "config_store", None)
    if isinstance(store, KafkaConfigStore):
        return ConfigLimits.for_config_topic(herder.config.originals)
    return ConfigLimits()


def create_app(herder: Herder) -> FastAPI:
    """The REST API over ``herder``. Authentication is the listener's (serve the app with
    :class:`~connectrt.listener.server.HttpServer` and the worker's ``ListenerSecurity``)."""
    # /docs (Swagger UI) from the assets fastapi-offline ships, served under /docs/assets by
    # this app: no CDN, and behind the listener's authentication like the rest. No /redoc: its
    # page loads a logo from the ReDoc CDN.
    app = FastAPIOffline(
        redoc_url=None,
        title="connectrt",
        version=__version__,
        description="Kafka Connect-compatible REST API of a connectrt worker.",
        default_response_class=JSON,
        static_url="/docs/assets",
        swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from a validator
    )
    # Requests under /connectors get 503 + Retry-After until the herder is ready.
    app.add_middleware(StartupGate, ready=lambda: herder.ready)
    # In a standby cluster a standby forwards them to the leader (outermost: before the gate).
    app.add_middleware(LeaderForwarding, leadership=lambda: getattr(herder, "leadership", None))
    limits = _config_limits(herder)
    # In the order of the OpenAPI document.
    routers = [
        root_router(herder),
        connectors_router(herder, limits),
        offsets_router(herder),
        control_router(herder),
        plugins_router(herder),
        loggers_router(herder),
        dlq_router(herder),  # connectrt: dead letter queue replay
        tap_router(herder),  # connectrt: the record inspector
    ]
    for router in routers:
        app.include_router(router)
    console = mount_console(app, herder)  # /ui (HTML; not in the OpenAPI document)
    # The secrets are looked up per error: the app may be built before the herder has them.
    install_error_handlers(
        app, lambda text: herder.secrets.redact(text), [app.router, *routers, console]
    )
    document_api(app, routers)  # bodies, response models, error statuses (rest/openapi.py)
    return app
