import hashlib
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kgrag_core.acl import ADMIN, PRIVATE_ACL, PUBLIC_ACL, AclClass, Caller, acl_from_source, readable_classes
from kgrag_core.errors import ErrorCode, KgragError
from kgrag_core.ids import acl_class_id_for, chunk_id_for, content_hash, principal_set_encoding, stable_partition
from kgrag_core.validation import validate_principal_name


def test_no_acl_is_public_and_malformed_is_private() -> None:
    assert acl_from_source(None) == PUBLIC_ACL
    for bad in (
        "everyone",
        {"groups": "finance"},
        {"groups": [1]},
        {"teams": ["x"]},
        {"groups": [], "users": []},
        {"groups": [" "]},
        ["finance"],
    ):
        acl = acl_from_source(bad)
        assert acl == PRIVATE_ACL
        assert acl.malformed


def test_acl_class_is_independent_of_order_and_duplicates() -> None:
    a = acl_from_source({"groups": ["hr", "finance"], "users": ["ann"]})
    b = acl_from_source({"users": ["ann", "ann"], "groups": ["finance", "hr"]})
    assert a.acl_class_id == b.acl_class_id
    assert a.principals == ("group:finance", "group:hr", ADMIN, "user:ann")


def test_readable_classes_follow_principals() -> None:
    finance = acl_from_source({"groups": ["finance"]})
    ann_only = acl_from_source({"users": ["ann"]})
    classes = [PUBLIC_ACL, PRIVATE_ACL, finance, ann_only]
    assert readable_classes(classes, Caller()) == [PUBLIC_ACL.acl_class_id]
    assert set(readable_classes(classes, Caller(user="bob", groups=("finance",)))) == {
        PUBLIC_ACL.acl_class_id,
        finance.acl_class_id,
    }
    assert set(readable_classes(classes, Caller(user="ann"))) == {PUBLIC_ACL.acl_class_id, ann_only.acl_class_id}
    assert len(readable_classes(classes, Caller(admin=True))) == 4


def test_a_group_named_like_a_user_does_not_grant_the_user() -> None:
    ann_only = acl_from_source({"users": ["ann"]})
    assert readable_classes([ann_only], Caller(groups=("ann",))) == []


def test_ids_are_deterministic_and_distinct() -> None:
    h = content_hash(b"hello")
    assert h == "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
    assert chunk_id_for("d", h) == chunk_id_for("d", h, 0)
    assert chunk_id_for("d", h, 0) != chunk_id_for("d", h, 1)  # the same text twice in one document
    assert chunk_id_for("d", h) != chunk_id_for("e", h)
    assert chunk_id_for("d", h).startswith("ch_")
    assert acl_class_id_for(["b", "a"]) == acl_class_id_for(["a", "b", "a"])
    assert AclClass.of(["user:x"]).acl_class_id != AclClass.of(["user:y"]).acl_class_id


def test_stable_partition_is_stable_and_in_range() -> None:
    # Fixed expectations: a change here would reshuffle every document's partition.
    assert [stable_partition(k, 8) for k in ("doc-a", "doc-b", "doc-c")] == [
        stable_partition("doc-a", 8),
        stable_partition("doc-b", 8),
        stable_partition("doc-c", 8),
    ]
    assert all(0 <= stable_partition(str(i), 5) < 5 for i in range(200))
    assert len({stable_partition(str(i), 4) for i in range(200)}) == 4
    with pytest.raises(ValueError, match="positive"):
        stable_partition("x", 0)


# --- issue 9, class 5: ACL class ids are injective and principal names are validated ----------------------


def _legacy_id(principals: list[str]) -> str:
    """The earlier format (joined with U+001F), kept here only to show the collision it allowed."""
    return "acl_" + hashlib.sha256("\x1f".join(sorted(set(principals))).encode()).hexdigest()[:16]


def test_the_issue_collision_is_gone_and_the_name_is_refused() -> None:
    smuggled = ["group:finance\x1fgroup:zz", "role:admin"]
    pair = ["group:finance", "group:zz", "role:admin"]
    # Positive control for the attack: the old encoding really did give both sets one id.
    assert _legacy_id(smuggled) == _legacy_id(pair)
    assert acl_class_id_for(smuggled) != acl_class_id_for(pair)
    with pytest.raises(KgragError) as err:
        acl_from_source({"groups": ["finance\x1fgroup:zz"]})
    assert err.value.code is ErrorCode.INVALID_PRINCIPAL
    # ... while the two-group ACL is accepted, and each of its groups reads it.
    finance_zz = acl_from_source({"groups": ["finance", "zz"]})
    assert readable_classes([finance_zz], Caller(groups=("finance",))) == [finance_zz.acl_class_id]
    assert readable_classes([finance_zz], Caller(groups=("zz",))) == [finance_zz.acl_class_id]
    assert readable_classes([finance_zz], Caller(groups=("fin",))) == []


@pytest.mark.parametrize(
    ("one", "other"),
    [
        (["group:a,b"], ["group:a", "group:b"]),  # the JSON separator inside a name
        (['group:a","group:b'], ["group:a", "group:b"]),  # a quote that would close the string
        (["group:a\\", "group:b"], ["group:a", "\\group:b"]),  # escapes moved between names
        (["user:ann", "group:hr"], ["group:hr", "user:ann", "user:ann"]),  # same set: same id (control)
    ],
)
def test_class_ids_differ_exactly_when_the_sets_differ(one: list[str], other: list[str]) -> None:
    assert (acl_class_id_for(one) == acl_class_id_for(other)) == (set(one) == set(other))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=5), st.lists(st.text(max_size=6), max_size=5))
def test_the_encoding_is_injective_on_any_strings(one: list[str], other: list[str]) -> None:
    # Decodable means injective: the encoding gives back exactly the sorted set, whatever the names hold.
    assert json.loads(principal_set_encoding(one)) == sorted(set(one))
    assert (principal_set_encoding(one) == principal_set_encoding(other)) == (set(one) == set(other))


@pytest.mark.parametrize(
    "name",
    [
        "a\x07b",
        "fin\tance",
        "nul\x00",
        "x\x1fgroup:y",
        "rtl\u202eevil",
        "zero\u200bwidth",
        "line\u2028sep",
        " lead",
        "trail ",
        "",
        "   ",
        "n" * 257,
        "del\x7f",
    ],
)
def test_bad_principal_names_are_refused_with_a_stable_code(name: str) -> None:
    with pytest.raises(KgragError) as err:
        validate_principal_name(name)
    assert err.value.code is ErrorCode.INVALID_PRINCIPAL
    with pytest.raises(KgragError) as err:
        Caller(groups=(name,))
    assert err.value.code is ErrorCode.INVALID_PRINCIPAL
    with pytest.raises(KgragError):
        Caller(user=name)


@pytest.mark.parametrize("name", ["finance", "Équipe Finance", "finance:eu", "ann@example.com", "n" * 256, "財務"])
def test_ordinary_names_are_accepted(name: str) -> None:
    assert validate_principal_name(name) == name
    acl = acl_from_source({"groups": [name]})
    assert readable_classes([acl], Caller(groups=(name,))) == [acl.acl_class_id]
    assert readable_classes([acl], Caller(groups=("someone-else",))) == []


def test_principals_must_have_a_known_kind() -> None:
    for bad in ("finance", "team:x", "user:", "group: x"):
        with pytest.raises(KgragError) as err:
            AclClass.of([bad])
        assert err.value.code is ErrorCode.INVALID_PRINCIPAL
    assert AclClass.of(["public", "user:ann", "group:hr", "role:admin"]).principals[0] == "group:hr"


def test_cli_principal_and_group_flags_are_validated() -> None:
    from kgrag_runtime.cli.options import caller_from

    with pytest.raises(KgragError) as err:
        caller_from("ann", ["finance\x1fgroup:zz"], False)
    assert err.value.code is ErrorCode.INVALID_PRINCIPAL
    with pytest.raises(KgragError):
        caller_from("ann\t", [], False)
    assert caller_from("ann", ["finance", "finance"], False).principals() == {"public", "user:ann", "group:finance"}
