"""Threads and sockets: broker connections, and the runtime built on them."""
