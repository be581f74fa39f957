"""MySQL, MariaDB and PostgreSQL setup: sessions, statements, replication."""
