"""A Hive job configuration: a dict, or a Hadoop configuration XML file, and
the input paths it names (Hadoop's comma list with backslash escapes)."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from collections.abc import Mapping

from metadata.errors import HudiBridgeError

INPUT_DIR = "mapreduce.input.fileinputformat.inputdir"
LEGACY_INPUT_DIR = "mapred.input.dir"


class JobConfError(HudiBridgeError, ValueError):
    """A job configuration that cannot be read."""


def load_job_conf(path: str) -> dict[str, str]:
    """`<configuration><property><name/><value/></property>...` as a dict."""
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        raise JobConfError(f"{path}: not a Hadoop configuration file ({exc})") from None
    conf = {}
    for prop in root.iter("property"):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name is None:
            raise JobConfError(f"{path}: a <property> without <name>")
        conf[name.strip()] = (value or "").strip()
    return conf


def split_input_paths(text: str) -> list[str]:
    """Hadoop's `StringUtils.split` on unescaped commas outside a glob's `{a,b}`
    (FileInputFormat.getPathStrings), then `unEscapeString`."""
    paths, current, escaped, braces = [], [], False, 0
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "," and braces == 0:
            paths.append("".join(current))
            current = []
        else:
            braces += 1 if char == "{" else -1 if char == "}" and braces else 0
            current.append(char)
    if escaped:
        raise JobConfError(f"input paths end with a lone escape character: {text!r}")
    paths.append("".join(current))
    return [p.strip() for p in paths if p.strip()]


def input_paths(conf: Mapping[str, str]) -> list[str]:
    text = conf.get(INPUT_DIR) or conf.get(LEGACY_INPUT_DIR)
    if not text:
        raise JobConfError(f"the job configuration has no {INPUT_DIR}")
    return split_input_paths(text)


def flag(conf: Mapping[str, str], key: str, default: bool) -> bool:
    """Hadoop's getBoolean: true/false in any case, anything else the default."""
    value = conf.get(key, "").strip().lower()
    return default if value not in ("true", "false") else value == "true"


def integer(conf: Mapping[str, str], key: str, default: int) -> int:
    value = conf.get(key)
    if value is None or not value.strip():
        return default
    try:
        return int(value.strip())
    except ValueError:
        raise JobConfError(f"{key}={value!r}: expected an integer") from None
