#!/usr/bin/env python3
"""JSON Schema property test (ctest grammar_schema_property).

Builds random schemas from the keywords duet's schema compiler enforces (plus annotations it
must ignore), adds real zod- and pydantic-style schemas, has grammar_samples (C++) compile each
and draw random texts from its grammar under random token budgets, and validates every text
with the jsonschema package (Debian python3-jsonschema), independently of duet. Fails when a
schema is refused, a text does not parse or validate, or a walk could not close in its budget.
Exit 77 (skipped) when jsonschema is missing.
"""
import argparse
import datetime
import json
import random
import re
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    print("python3-jsonschema is missing (scripts/install-deps.sh installs it)")
    sys.exit(77)

BIG = 9007199254740991  # Number.MAX_SAFE_INTEGER, as zod writes integer bounds

# RFC 3339 shapes for the formats whose jsonschema checkers need packages Debian does not ship.
RFC3339_TIME = r"\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})"
checker = jsonschema.FormatChecker()


@checker.checks("date-time", raises=ValueError)
def _date_time(s):
    if not isinstance(s, str):
        return True
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}[Tt]" + RFC3339_TIME, s):
        return False
    datetime.datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    return True


@checker.checks("time", raises=ValueError)
def _time(s):
    if not isinstance(s, str):
        return True
    if not re.fullmatch(RFC3339_TIME, s):
        return False
    datetime.time.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00"))
    return True


@checker.checks("email")
def _email(s):
    return not isinstance(s, str) or re.fullmatch(r"[^@\s]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+", s) is not None


PATTERNS = [
    r"^[a-z]{2,5}$", r"^\d{3}-\d{4}$", r"^(foo|bar)+$", r"^[A-Z][a-z]*( [A-Z][a-z]*)?$", r"abc",
    r"^\w+@\w+\.com$", r'^[^"\\]{0,4}$', r"^(\+|-)?[0-9]+(\.[0-9]{1,2})?$", r"^.{1,3}$", r"^a?b*c{2}$",
    r"^(?:[0-9a-f]{2}:){2}[0-9a-f]{2}$", r"^[\u00e9\u4e2d]+$", r'^"q"\\$', r"^\S\s\D$", r"x|^y", r"^[^a-z]$",
]
FORMATS = ["date-time", "date", "time", "uuid", "email", "ipv4"]
# (pattern or format, minLength, maxLength) the compiler enforces together (None: keyword absent):
# one bound with any pattern; both bounds when the repeated and optional parts are single characters
PATTERN_LENGTHS = [
    (r"^[a-z]+-[0-9]+$", None, 6), (r"^[a-z]+-[0-9]+$", 4, 9), (r"^\w+@\w+\.com$", 8, 12), (r"^(foo|bar)+$", None, 7),
    (r"^(foo|bar)+$", 7, None), (r"^[\u00e9\u4e2d]+$", 2, 5), (r"^a?b*c{2}$", 4, 6), (r"^.{1,3}$", 2, None),
    (r"^[A-Z][a-z]*( [A-Z][a-z]*)?$", None, 9), (r'^[^"\\]*$', 1, 2000), (r"^[a-z]*$", 70, 1000),
    (r"^(\+|-)?[0-9]+(\.[0-9]{1,2})?$", 3, None),
]
# With minLength, the closing reserve counts a byte per missing character: a lower bound where a
# pattern adds characters of several bytes or several at a time, so a walk with a budget of just
# that reserve may not close (docs/grammar.md); its texts must still validate.
RESERVE_LOWER_BOUND = [r"^(foo|bar)+$", r"^[\u00e9\u4e2d]+$"]
FORMAT_LENGTHS = [("date-time", None, 25), ("email", None, 20), ("email", 30, None), ("ipv4", 9, 13), ("uuid", 36, 36),
                  ("date", None, 10), ("time", 12, None), ("date-time", 0, 200)]
NAMES = ["a", "b", "name", "a b", 'quo"te', "\u00fc\u00f1\u00ed", "x-y", "n1", "$k"]
ANY_VALUES = [1, -3, 2.5, "s", "", None, True, False, [1, "x"], {"k": [1, 2]}, {}, []]


def annotate(rng, s):
    for key, value in [("title", "T"), ("description", "a \"thing\""), ("$comment", "c"), ("deprecated", False),
                       ("readOnly", False), ("examples", [1]), ("default", None), ("x-extra", {"a": 1})]:
        if rng.random() < 0.12:
            s[key] = value
    return s


def int_bounds(rng, s):
    points = sorted(rng.sample([-BIG, -1000, -5, 0, 3, 17, 99, 100, 12345, BIG], 2))
    lo, hi = points
    if hi - lo < 3:
        hi = lo + 3
    mode = rng.randrange(5)
    if mode == 0:
        s.update(minimum=lo, maximum=hi)
    elif mode == 1:
        s.update(exclusiveMinimum=lo, exclusiveMaximum=hi)
    elif mode == 2:
        s.update(minimum=lo)
    elif mode == 3:
        s.update(maximum=hi)
    else:
        s.update(minimum=lo, exclusiveMaximum=hi)
    return s


def number_bounds(rng, s):
    lo = rng.choice([-BIG, -100.5, -2.5, 0, 0.5, 3.25, 1e3])
    hi = lo + rng.choice([2, 2.5, 10.75, 1000, 1e6])
    mode = rng.randrange(4)
    if mode == 0:
        s.update(minimum=lo, maximum=hi)
    elif mode == 1:
        s.update(exclusiveMinimum=lo, exclusiveMaximum=hi)
    elif mode == 2:
        s.update(minimum=lo)
    else:
        s.update(exclusiveMaximum=hi)
    return s


def scalar(rng):
    k = rng.randrange(12)
    if k == 0:
        return int_bounds(rng, {"type": "integer"})
    if k == 1:
        return number_bounds(rng, {"type": "number"})
    if k == 2:
        if rng.random() < 0.4:  # counted repetitions (above 64: a counter in the parse stack)
            lo = rng.choice([0, 1, 65, 1500])
            s = {"type": "string", "minLength": lo, "maxLength": rng.choice([lo + 100, 5000, 65535])}
            if rng.random() < 0.3:
                del s["minLength" if rng.random() < 0.5 else "maxLength"]
            return s
        lo = rng.randrange(4)
        return {"type": "string", "minLength": lo, "maxLength": lo + rng.randrange(6)}
    if k in (3, 4) and rng.random() < 0.4:  # with minLength/maxLength
        key, lengths = ("pattern", PATTERN_LENGTHS) if k == 3 else ("format", FORMAT_LENGTHS)
        value, lo, hi = rng.choice(lengths)
        s = {"type": "string", key: value}
        if lo is not None:
            s["minLength"] = lo
        if hi is not None:
            s["maxLength"] = hi
        return s
    if k == 3:
        return {"type": "string", "pattern": rng.choice(PATTERNS)}
    if k == 4:
        return {"type": "string", "format": rng.choice(FORMATS)}
    if k == 5:
        return {"enum": rng.sample(ANY_VALUES, 3)}
    if k == 6:
        return {"const": rng.choice(ANY_VALUES)}
    if k == 7:
        return {"type": rng.choice(["boolean", "null", "integer", "number", "string"])}
    if k == 8:
        return {"type": "integer", "multipleOf": 1}
    if k == 9:
        return {"type": ["string", "integer"]}
    if k == 10:
        return {"type": "string", "enum": ["x", "y", 3]}
    return {"type": "number", "minimum": 0}


def schema(rng, depth):
    if depth <= 0 or rng.random() < 0.35:
        return annotate(rng, scalar(rng))
    k = rng.randrange(9)
    if k <= 2:  # object
        names = rng.sample(NAMES, rng.randrange(1, 5))
        s = {"type": "object", "properties": {n: schema(rng, depth - 1) for n in names}}
        s["required"] = [n for n in names if rng.random() < 0.5]
        if rng.random() < 0.4:
            s["additionalProperties"] = False
        return annotate(rng, s)
    if k == 3:  # array
        s = {"type": "array", "items": schema(rng, depth - 1)}
        lo = rng.choice([0, 1, 2, 0, 1, 2, 66])
        s["minItems"] = lo
        if rng.random() < 0.7:
            s["maxItems"] = lo + rng.choice([0, 1, 2, 0, 1, 2, 70, 5000])
        if rng.random() < 0.2:
            s["uniqueItems"] = False
        return annotate(rng, s)
    if k == 4:  # tuple
        prefix = [schema(rng, depth - 1) for _ in range(rng.randrange(1, 4))]
        s = {"type": "array", "prefixItems": prefix}
        extra = rng.randrange(3)
        if extra == 0:
            s["items"] = False
        elif extra == 1:
            s["items"] = schema(rng, depth - 1)
        s["minItems"] = rng.randrange(len(prefix) + 1)
        return s
    if k == 5:  # nullable
        return annotate(rng, {"anyOf": [schema(rng, depth - 1), {"type": "null"}], "default": None})
    if k == 6:  # anyOf / oneOf with branches of distinct types (oneOf must match exactly one)
        kinds = rng.sample(["string", "integer", "boolean", "null", "object", "array"], rng.randrange(2, 4))
        branches = []
        for t in kinds:
            b = {"type": t}
            if t == "object":
                b["properties"] = {"v": schema(rng, depth - 1)}
                b["required"] = ["v"]
            elif t == "array":
                b["items"] = schema(rng, depth - 1)
                b["maxItems"] = 2
            elif t == "integer":
                int_bounds(rng, b)
            branches.append(b)
        return {rng.choice(["anyOf", "oneOf"]): branches}
    if k == 7:  # allOf of objects
        a = {"type": "object", "properties": {"p": schema(rng, depth - 1)}, "required": ["p"]}
        b = {"properties": {"q": schema(rng, depth - 1)}}
        if rng.random() < 0.5:
            b["required"] = ["q"]
        return {"allOf": [a, b], "description": "merged"}
    return {"$ref": "#/$defs/node"}  # recursion through $defs


def random_schema(rng):
    s = schema(rng, 3)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "urn:x", **s,
            "$defs": {"node": {"type": "object", "properties": {
                "value": {"type": "integer", "minimum": 0, "maximum": 9},
                "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
                "required": ["value"], "additionalProperties": False}}}


ZOD = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": -BIG, "maximum": BIG},
        "count": {"type": "integer", "exclusiveMinimum": 0, "maximum": BIG},
        "email": {"type": "string", "format": "email"},
        "role": {"type": "string", "enum": ["admin", "user"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": ["string", "null"]}},
                    "required": ["city", "zip"], "additionalProperties": False},
        "nickname": {"type": "string"},
        "score": {"anyOf": [{"type": "number", "exclusiveMinimum": 0}, {"type": "null"}]},
        "when": {"type": "string", "format": "date-time"},
    },
    "required": ["name", "age", "count", "email", "role", "tags", "address", "score", "when"],
    "additionalProperties": False,
    "$schema": "http://json-schema.org/draft-07/schema#",
}

PYDANTIC_V2 = {
    "$defs": {
        "Address": {"properties": {"street": {"title": "Street", "type": "string"},
                                   "city": {"title": "City", "type": "string", "maxLength": 30}},
                    "required": ["street", "city"], "title": "Address", "type": "object"},
        "Status": {"enum": ["active", "inactive"], "title": "Status", "type": "string"},
        "Node": {"properties": {"name": {"type": "string", "maxLength": 4},
                                "kids": {"items": {"$ref": "#/$defs/Node"}, "type": "array", "maxItems": 2}},
                 "required": ["name"], "title": "Node", "type": "object"},
        "Cat": {"properties": {"pet_type": {"const": "cat", "title": "Pet Type", "type": "string"},
                               "meows": {"title": "Meows", "type": "integer", "minimum": 0}},
                "required": ["pet_type", "meows"], "title": "Cat", "type": "object"},
        "Dog": {"properties": {"pet_type": {"enum": ["dog"], "title": "Pet Type", "type": "string"},
                               "barks": {"title": "Barks", "type": "number"}},
                "required": ["pet_type", "barks"], "title": "Dog", "type": "object"},
    },
    "properties": {
        "id": {"format": "uuid", "title": "Id", "type": "string"},
        "created": {"format": "date-time", "title": "Created", "type": "string"},
        "address": {"$ref": "#/$defs/Address"},
        "billing": {"anyOf": [{"$ref": "#/$defs/Address"}, {"type": "null"}], "default": None},
        "status": {"$ref": "#/$defs/Status", "default": "active"},
        "count": {"default": 1, "exclusiveMinimum": 0, "maximum": 100, "title": "Count", "type": "integer"},
        "ratio": {"maximum": 1.0, "minimum": 0.0, "title": "Ratio", "type": "number"},
        "tags": {"items": {"type": "string"}, "title": "Tags", "type": "array", "maxItems": 5},
        "pair": {"maxItems": 2, "minItems": 2, "prefixItems": [{"type": "integer"}, {"type": "string"}],
                 "title": "Pair", "type": "array"},
        "birthday": {"anyOf": [{"format": "date", "type": "string"}, {"type": "null"}], "default": None},
        "code": {"pattern": "^[A-Z]{3}-\\d{2}$", "title": "Code", "type": "string"},
        "tree": {"$ref": "#/$defs/Node"},
        "pet": {"oneOf": [{"$ref": "#/$defs/Cat"}, {"$ref": "#/$defs/Dog"}],
                "discriminator": {"propertyName": "pet_type", "mapping": {"cat": "#/$defs/Cat", "dog": "#/$defs/Dog"}}},
    },
    "required": ["id", "created", "address", "count", "ratio", "pair", "code", "tree", "pet"],
    "title": "Order", "type": "object",
}

PYDANTIC_V1 = {
    "title": "Pet", "type": "object",
    "properties": {
        "kind": {"title": "Kind", "description": "the kind", "allOf": [{"$ref": "#/definitions/Kind"}]},
        "owner": {"title": "Owner", "allOf": [{"$ref": "#/definitions/Owner"}]},
        "age": {"title": "Age", "type": "integer", "minimum": 0, "exclusiveMaximum": 40},
    },
    "required": ["kind", "owner"],
    "definitions": {
        "Kind": {"title": "Kind", "description": "An enumeration.", "enum": ["cat", "dog"], "type": "string"},
        "Owner": {"title": "Owner", "type": "object", "properties": {"name": {"title": "Name", "type": "string"},
                                                                    "since": {"type": "string", "format": "date"}},
                  "required": ["name"]},
    },
}


def longest(inst, kind):
    """The longest string (kind str) or array (kind list) anywhere in a JSON value."""
    own = len(inst) if isinstance(inst, kind) else 0
    kids = inst.values() if isinstance(inst, dict) else inst if isinstance(inst, list) else []
    return max([own] + [longest(k, kind) for k in kids])


def strict_loads(text):
    def bad_constant(c):
        raise ValueError(f"not JSON: {c}")
    return json.loads(text, parse_constant=bad_constant)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sampler", required=True)
    ap.add_argument("--schemas", type=int, default=150)
    ap.add_argument("--walks", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    schemas = [ZOD, PYDANTIC_V2, PYDANTIC_V1] + [random_schema(rng) for _ in range(a.schemas)]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        for s in schemas:
            f.write(json.dumps(s) + "\n")
        f.flush()
        out = subprocess.run([a.sampler, f.name, str(a.walks), str(a.seed)], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"grammar_samples failed ({out.returncode}): {out.stderr}")
        return 1
    failures, n_samples, max_str, max_arr = [], 0, 0, 0
    for line in out.stdout.split("\n"):
        if not line:
            continue
        r = json.loads(line)
        s = schemas[r["i"]]
        if "error" in r:
            failures.append(f"schema {r['i']} refused: {r['error']}\n  {json.dumps(s)}")
            continue
        lower_bound = any(p in json.dumps(s) for p in map(json.dumps, RESERVE_LOWER_BOUND)) and "minLength" in json.dumps(s)
        if r["unclosed"] and not lower_bound:
            failures.append(f"schema {r['i']}: {r['unclosed']} walks did not close within their budget")
        cls = jsonschema.validators.validator_for(s, default=jsonschema.Draft202012Validator)
        v = cls(s, format_checker=checker)
        for text in r["samples"]:
            n_samples += 1
            try:
                inst = strict_loads(text)
            except ValueError as e:
                failures.append(f"schema {r['i']}: not JSON ({e}): {text!r}")
                continue
            max_str, max_arr = max(max_str, longest(inst, str)), max(max_arr, longest(inst, list))
            errs = list(v.iter_errors(inst))
            if errs:
                failures.append(f"schema {r['i']}: {errs[0].message}\n  text: {text!r}\n  schema: {json.dumps(s)}")
    print(f"{len(schemas)} schemas, {n_samples} samples validated with jsonschema {jsonschema.__name__}; "
          f"longest string {max_str}, longest array {max_arr}")
    # the eager walks must reach the counted repetitions (counts above 64), or they were not tested
    if a.schemas >= 100 and (max_str < 5000 or max_arr < 70):
        failures.append(f"no sample reached a long string or array (longest {max_str}, {max_arr})")
    for f in failures[:20]:
        print("FAIL", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
