"""autograder.speed: the worker's cheaper nbgrader gives the same outcomes as nbgrader's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.speed import CachedValidation

SCHEMA = json.loads((Path(jsonschema.__file__).parent.parent / "nbgrader" / "nbgraderformat" / "v3.json").read_text())

values = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False), st.text(max_size=5),
                   st.lists(st.integers(), max_size=2))
metadata = st.dictionaries(st.sampled_from(["grade", "solution", "locked", "points", "grade_id", "schema_version",
                                            "task", "checksum", "other"]), values, max_size=6)


def outcome(validate, instance, schema=SCHEMA):
    try:
        validate(instance, schema)
    except jsonschema.ValidationError as err:
        return ("invalid", err.message, list(err.path))
    return ("valid",)


@settings(max_examples=300, deadline=None)
@given(metadata)
def test_the_cached_validation_agrees_with_jsonschema_on_any_metadata(instance):
    cached = CachedValidation()
    assert outcome(cached.validate, instance) == outcome(jsonschema.validate, instance)
    assert outcome(cached.validate, instance, json.loads(json.dumps(SCHEMA))) == outcome(jsonschema.validate, instance)


def test_a_bad_schema_is_still_refused():
    with pytest.raises(jsonschema.SchemaError):
        CachedValidation().validate({}, {"type": "no such type"})


def test_other_attributes_are_the_real_modules():
    assert CachedValidation().ValidationError is jsonschema.ValidationError


def test_install_speeds_up_nbgrader_and_the_gradebook_in_that_process_only(tmp_path):
    script = f"""
import sqlalchemy
from autograder.speed import install
from nbgrader.nbgraderformat import common
def synchronous():
    engine = sqlalchemy.create_engine("sqlite:///{tmp_path / 'g.db'}")
    with engine.connect() as connection:
        return connection.exec_driver_sql("PRAGMA synchronous").scalar()
before = synchronous()
install(); install()
print(before, synchronous(), type(common.jsonschema).__name__)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent).stdout.split()
    assert out == ["2", "0", "CachedValidation"]  # FULL before, OFF after
