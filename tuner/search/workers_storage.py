"""Where the workers of a shared storage register: in a storage beside the studies' own, so that Optuna's tools
(``optuna.get_all_study_summaries``, optuna-dashboard) list the experiment's studies alone.

- a journal file ``journal:///shared/x.log``: the journal ``x.log.workers`` in the same folder, which every host
  writes already;
- an SQLite file ``sqlite:///x.db``: the file ``x.db.workers`` beside it;
- PostgreSQL: the same database, in a schema of its own, ``tuner_workers`` (created where missing: the user that
  creates Optuna's tables may create a schema too);
- any other database: its own studies' storage, where the registry is the study ``<experiment>/workers``.
"""

from __future__ import annotations

import sqlalchemy
from sqlalchemy.engine import make_url

from tuner.errors import TunerError
from tuner.search.storage import CONNECT_TIMEOUT_S, JOURNAL_SCHEME, database_url, journal_path, shown

SUFFIX = ".workers"
"""Of the journal or SQLite file that holds the registry, after the studies' file name."""
SCHEMA = "tuner_workers"
"""The PostgreSQL schema of the registry's tables."""


def registry_url(url: str) -> str:
    """The storage URL of the registry of the workers sharing the storage ``url`` (see the module text)."""
    path = journal_path(url)
    if path is not None:
        return f"{JOURNAL_SCHEME}{path.with_name(path.name + SUFFIX)}"
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite" and parsed.database:
        return parsed.set(database=parsed.database + SUFFIX).render_as_string(hide_password=False)
    if backend == "postgresql":
        given = parsed.query.get("options")
        options = " ".join([*(given if isinstance(given, tuple) else [given] if given else []),
                            f"-csearch_path={SCHEMA}"])
        return parsed.update_query_dict({"options": options}).render_as_string(hide_password=False)
    return url


def prepare_registry(url: str) -> None:
    """Create the registry's PostgreSQL schema where ``url`` (the studies' storage) is a PostgreSQL database that
    lacks it; nothing for the others. Two hosts creating it at once both succeed."""
    parsed = database_url(url) if journal_path(url) is None else None
    if parsed is None or parsed.get_backend_name() != "postgresql":
        return
    args = {} if "connect_timeout" in parsed.query else {"connect_timeout": CONNECT_TIMEOUT_S}
    engine = sqlalchemy.create_engine(parsed, connect_args=args)
    exists = sqlalchemy.text("SELECT 1 FROM pg_namespace WHERE nspname = :schema")
    try:
        with engine.begin() as connection:
            if connection.execute(exists, {"schema": SCHEMA}).first() is None:
                connection.execute(sqlalchemy.text(f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}"))
    except sqlalchemy.exc.IntegrityError:  # another host created it at the same moment
        pass
    except sqlalchemy.exc.SQLAlchemyError as exc:
        raise TunerError(f"the workers of the shared storage '{shown(url)}' register in its schema {SCHEMA}, which "
                         f"cannot be created ({str(exc).splitlines()[0]}); create it once as a user who may "
                         f"(CREATE SCHEMA {SCHEMA} AUTHORIZATION <the run's user>)") from None
    finally:
        engine.dispose()
