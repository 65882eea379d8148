"""What every HTTP listener of the worker shares: the uvicorn server thread and its guards.

The REST API and the built-in schema registry both serve through :class:`HttpServer`
(``server``) behind one :class:`ListenerSecurity` (``security``), so a listener never opens
without the worker's authentication: credentials checked off the event loop with a cache and a
per-client back-off (``auth_guard`` over ``auth``), then a bound on request bodies
(``limits``). ``asgi`` holds the raw ASGI helpers they answer with.
"""
