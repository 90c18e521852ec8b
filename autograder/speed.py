"""What nbgrader pays on every notebook that a grading worker can pay once.

Measured on one lesson-01 notebook (bench/README.md): nbgrader checks every cell's nbgrader
metadata with ``jsonschema.validate``, which checks the *schema* itself again on every call,
twice per notebook (0.36 s each); and it commits to the gradebook about fifty times per
notebook, each commit waiting for the disk. A worker's gradebook is a private copy that the
grade command checks and merges afterwards (:mod:`autograder.gradebooks`), and a worker that
dies has its student graded again, so its commits need not wait for the disk.

:func:`install` makes both cheap in the worker process only, with the same outcomes: the
metadata is validated against the same schema with a validator built once (the same errors,
raised the same way), and the private gradebook is written without waiting for the disk.

>>> import jsonschema
>>> validate = CachedValidation()
>>> schema = {"type": "object", "properties": {"points": {"type": "number"}}}
>>> validate.validate({"points": 2}, schema)
>>> try:
...     validate.validate({"points": "two"}, schema)
... except jsonschema.ValidationError as err:
...     print(err.message)
'two' is not of type 'number'
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["CachedValidation", "install"]


class CachedValidation:
    """``jsonschema.validate`` with one validator per schema, built (and its schema checked) once.

    Stands in for the ``jsonschema`` module where nbgrader calls ``jsonschema.validate``; every
    other attribute is the real module's.
    """

    def __init__(self) -> None:
        import jsonschema

        self._jsonschema = jsonschema
        self._validators: dict[str, Any] = {}  # by the schema as JSON (nbgrader reloads it each time)

    def validate(self, instance: Any, schema: Any) -> None:
        key = json.dumps(schema)  # key order kept: it decides which error comes first
        validator = self._validators.get(key)
        if validator is None:
            cls = self._jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            validator = self._validators[key] = cls(json.loads(key))
        error = self._jsonschema.exceptions.best_match(validator.iter_errors(instance))
        if error is not None:
            raise error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jsonschema, name)


def _fast_sqlite(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=OFF")  # a private copy: a worker that dies is graded again
    cursor.close()


def install() -> None:
    """Apply both in this process (a grading worker's; never the grade command's own)."""
    from nbgrader.nbgraderformat import common
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    if not isinstance(common.jsonschema, CachedValidation):
        common.jsonschema = CachedValidation()
    if not event.contains(Engine, "connect", _fast_sqlite):
        event.listen(Engine, "connect", _fast_sqlite)
