"""What every HTTP listener of the worker shares: the uvicorn server thread and authentication.

The REST API and the built-in schema registry both serve through :class:`HttpServer` and check
requests with one :class:`Authenticator`, so a listener never opens without the worker's
authentication.
"""
