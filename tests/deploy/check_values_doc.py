#!/usr/bin/env python3
"""Every value the chart accepts is documented: each key path of values.schema.json (recursing into
objects whose keys it fixes) appears in backquotes in the chart's README, in the values table or in
the NVIDIA migration table; and every key of values.yaml is one the schema accepts.
Usage: check_values_doc.py CHART_DIR"""
import json
import sys

import yaml


def schema_paths(node, prefix=""):
    props = node.get("properties")
    if not props or node.get("additionalProperties", True) is not False:
        return [prefix] if prefix else []
    out = [prefix] if prefix else []
    for key, sub in props.items():
        out += schema_paths(sub, f"{prefix}.{key}" if prefix else key)
    return out


def values_paths(value, schema, prefix=""):
    """Leaf keys of values.yaml, following the schema's fixed objects; a key the schema lacks is returned too."""
    out = []
    if not isinstance(value, dict):
        return out
    props = schema.get("properties") if schema.get("additionalProperties", True) is False else None
    if props is None:
        return out
    for key, sub in value.items():
        path = f"{prefix}.{key}" if prefix else key
        if key not in props:
            out.append(("unknown", path))
            continue
        out.append(("known", path))
        out += values_paths(sub, props[key], path)
    return out


def main(chart):
    schema = json.load(open(f"{chart}/values.schema.json"))
    values = yaml.safe_load(open(f"{chart}/values.yaml"))
    readme = open(f"{chart}/README.md").read()
    problems = []
    for path in schema_paths(schema):
        if path == "global":
            continue
        if f"`{path}" not in readme:
            problems.append(f"README.md does not document `{path}`")
    for kind, path in values_paths(values, schema):
        if kind == "unknown":
            problems.append(f"values.yaml has {path}, which values.schema.json refuses")
    for p in problems:
        print(f"FAIL: {p}", file=sys.stderr)
    print(f"check_values_doc: {len(schema_paths(schema))} schema keys, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
