"""The idempotent and transactional producer's state, sans-IO (like groupkit/group).

``states`` is the transaction state table (Java's TransactionManager.State), ``error_actions``
maps each transaction API's error codes to what the producer does, ``sequences`` keeps the
producer id, epoch and per-partition sequence numbers, and ``manager`` puts them together: the
runtime's sender asks it what may be sent and tells it what the brokers answered.
"""
