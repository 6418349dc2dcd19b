"""Names as resolution compares them, and the names it must never compare on.

`normalise_entity_name` is coarser than `extraction.identity.normalise_name` (which only makes one row of
"Priya Raman" and " priya raman."): it also drops accents, legal suffixes and a type's filler words, expands
common abbreviations and reads a person's e-mail address as a name. What it produces is never an identity; it
is what blocking keys and name similarity are computed from.

Two kinds of surface form are never matching keys (seed 000: "his" was an alias on a dozen people, and
"framework" and "map" on unrelated entities): pronouns, and one-word forms that are a common noun or written
in lower case. A one-word alias must keep its capitals to count ("HIS" the framework, not "his").
"""

from __future__ import annotations

import functools
import re
import unicodedata

import jellyfish

PRONOUNS = frozenset(
    {
        "i", "me", "my", "mine", "myself", "you", "your", "yours", "yourself", "yourselves",
        "he", "him", "his", "himself", "she", "her", "hers", "herself", "it", "its", "itself",
        "we", "us", "our", "ours", "ourselves", "they", "them", "their", "theirs", "themselves",
        "this", "that", "these", "those", "who", "whom", "whose", "which", "one", "someone", "somebody",
    }
)  # fmt: skip

# Nouns that name a kind of thing, not a thing: capitalised at the start of a sentence they still name nothing.
COMMON_NOUNS = frozenset(
    {
        "team", "teams", "customer", "customers", "client", "clients", "system", "systems", "service", "services",
        "company", "organisation", "organization", "business", "vendor", "vendors", "supplier", "partner",
        "carrier", "site", "sites", "warehouse", "office", "building", "location", "project", "programme",
        "program", "initiative", "tool", "app", "application", "product", "solution", "database", "server",
        "group", "department", "staff", "people", "person", "user", "users", "manager", "engineer", "lead",
        "member", "employee", "colleague", "incident", "outage", "ticket", "issue", "framework", "map",
        "management", "everyone", "anyone", "nobody",
    }
)  # fmt: skip

_DETERMINERS = frozenset({"the", "a", "an", "our", "their", "this", "that", "its", "his", "her"})

LEGAL_SUFFIXES = frozenset(
    {
        "ltd", "limited", "gmbh", "mbh", "inc", "incorporated", "corp", "corporation", "llc", "llp", "plc",
        "bv", "nv", "ag", "kg", "sa", "sas", "sarl", "srl", "spa", "oy", "ab", "as", "aps", "pty", "co", "sp",
        "zoo",
    }
)  # fmt: skip

ABBREVIATIONS: dict[str, str] = {
    "intl": "international",
    "int": "international",
    "dept": "department",
    "mgmt": "management",
    "svc": "service",
    "svcs": "services",
    "st": "street",
    "ave": "avenue",
    "rd": "road",
    "bros": "brothers",
    "assoc": "associates",
    "tech": "technology",
}

# Words a type's names often carry around the name proper: "Routing team" is the team "Routing".
_TYPE_FILLER: dict[str, frozenset[str]] = {
    "Team": frozenset({"team", "squad"}),
    "Project": frozenset({"project", "programme", "program"}),
}

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_DROPPED = re.compile(r"[.'’`´]")  # "B.V." is "bv", "O'Neill" is "oneill", "M. Chen" is "m chen"
_SEPARATORS = re.compile(r"[^0-9a-z]+")


def _fold(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _strip_edges(tokens: list[str], drop: frozenset[str], *, leading: bool, trailing: bool) -> list[str]:
    # The last remaining token always stays: "Team" alone is still a name (and is_generic_one_word's concern).
    while trailing and len(tokens) > 1 and tokens[-1] in drop:
        tokens.pop()
    while leading and len(tokens) > 1 and tokens[0] in drop:
        tokens.pop(0)
    return tokens


# Memoised (pure functions of their arguments): a pass asks for the same profiles' keys once per pair.
@functools.lru_cache(maxsize=1 << 16)
def name_tokens(name: str, entity_type: str) -> tuple[str, ...]:
    """The tokens of `normalise_entity_name`, in order."""
    text = name.strip()
    if entity_type == "Person" and _EMAIL.match(text):
        text = re.sub(r"[._\-+]+", " ", text.split("@", 1)[0])  # maria.chen@northwind.example -> maria chen
    elif entity_type == "Person" and text.count(",") == 1:
        family, given = text.split(",")
        text = f"{given} {family}"  # "Chen, Maria" is Maria Chen
    text = _DROPPED.sub("", _fold(text)).replace("&", " and ").replace("+", " and ")
    tokens = [ABBREVIATIONS.get(token, token) for token in _SEPARATORS.split(text) if token]
    tokens = _strip_edges(tokens, _DETERMINERS, leading=True, trailing=False)
    if entity_type == "Organization":
        tokens = _strip_edges(tokens, LEGAL_SUFFIXES, leading=False, trailing=True)
    filler = _TYPE_FILLER.get(entity_type)
    if filler:
        tokens = _strip_edges(tokens, filler, leading=True, trailing=True)
    return tuple(tokens)


def normalise_entity_name(name: str, entity_type: str) -> str:
    """Case, accents, punctuation, legal suffixes, abbreviations and whitespace normalised; "" if nothing is left."""
    return " ".join(name_tokens(name, entity_type))


def phonetic_key(name: str, entity_type: str) -> str:
    """Metaphone of each token ("Harbor" and "Harbour" agree); digits are kept as they are."""
    keys = [
        token if token.isdigit() else (jellyfish.metaphone(token) or token) for token in name_tokens(name, entity_type)
    ]
    return " ".join(keys)


def is_pronoun(name: str) -> bool:
    """A pronoun in any case but all capitals: "HIS" is a framework and "IT" a department, "His" and "it" are not."""
    stripped = name.strip().strip(".,;:!?\"'()[]")
    if len(stripped) >= 2 and stripped.isupper():
        return False
    return " ".join(_fold(stripped).split()) in PRONOUNS


def is_generic_one_word(name: str) -> bool:
    """One word (after "the", "our", ...) that is a common noun, or written all in lower case ("relay", "team")."""
    words = [word.strip(".,;:!?\"'()[]") for word in name.split()]
    words = [word for word in words if word]
    while len(words) > 1 and words[0].casefold() in _DETERMINERS:
        words.pop(0)
    if len(words) != 1:
        return False
    word = words[0]
    return word.islower() or word.casefold() in COMMON_NOUNS


@functools.lru_cache(maxsize=1 << 16)
def matching_key(name: str, entity_type: str) -> str | None:
    """The normalised form a surface form may match on, or None when it must never be a matching key."""
    if is_pronoun(name) or is_generic_one_word(name):
        return None
    return normalise_entity_name(name, entity_type) or None
