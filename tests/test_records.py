"""ground.records: frozen records that behave as the frozen dataclasses they replace on the hooks'
path."""

from __future__ import annotations

import copy
import dataclasses
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ground.records import FrozenRecordError, Record, field, field_names


class Point(Record):
    x: int
    label: str = "p"
    tags: tuple[str, ...] = field(default_factory=tuple, repr=False)
    seen: int = field(default=0, compare=False)


@dataclasses.dataclass(frozen=True)
class PointDC:
    x: int
    label: str = "p"
    tags: tuple[str, ...] = dataclasses.field(default_factory=tuple, repr=False)
    seen: int = dataclasses.field(default=0, compare=False)


class Loose(Record, slots=False):
    x: int
    many: int = 3


values = st.tuples(st.integers(), st.text(max_size=5), st.lists(st.text(max_size=3), max_size=3).map(tuple),
                   st.integers())


@given(values, values)
def test_a_record_compares_hashes_and_shows_as_the_dataclass_it_replaces(a, b):
    ra, rb, da, db = Point(*a), Point(*b), PointDC(*a), PointDC(*b)
    assert (ra == rb) == (da == db)
    if ra == rb:
        assert hash(ra) == hash(rb)
    assert repr(ra).removeprefix("Point") == repr(da).removeprefix("PointDC")
    assert tuple(getattr(ra, name) for name in field_names(Point)) == a


@given(values, st.integers(), st.text(max_size=5))
def test_replace_changes_only_what_it_names(a, x, label):
    record = Point(*a)
    changed = record.replace(x=x, label=label)
    assert (changed.x, changed.label, changed.tags, changed.seen) == (x, label, record.tags, record.seen)
    assert record == Point(*a)  # the original is unchanged
    assert record.replace() == record and record.replace() is not record


@given(values)
def test_copies_and_pickles_come_back_equal(a):
    record = Point(*a)
    assert pickle.loads(pickle.dumps(record)) == record
    assert copy.copy(record) == record == copy.deepcopy(record)


def test_a_record_is_frozen_and_slotted_and_refuses_bad_arguments():
    record = Point(1)
    with pytest.raises(FrozenRecordError):
        record.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del record.label  # type: ignore[misc]
    with pytest.raises(AttributeError):
        record.other = 1  # type: ignore[attr-defined]
    assert not hasattr(record, "__dict__") and Point.__slots__ == ("x", "label", "tags", "seen")
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'y'"):
        Point(1, y=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        record.replace(y=2)
    assert Point(1).tags == () and Point(1, tags=("a",)).tags == ("a",)


def test_a_default_factory_is_called_per_instance():
    class Bag(Record):
        items: list[int] = field(default_factory=list)

    first, second = Bag(), Bag()
    first.items.append(1)
    assert second.items == []


def test_without_slots_defaults_stay_on_the_class():
    assert Loose.many == 3 and Loose(1).many == 3 and Loose(1, 4).__dict__ == {"x": 1, "many": 4}
    with pytest.raises(FrozenRecordError):
        Loose(1).x = 2  # type: ignore[misc]


def test_a_field_without_a_default_after_one_with_is_refused():
    with pytest.raises(TypeError, match="non-default field 'y'"):
        class Bad(Record):
            x: int = 0
            y: int
