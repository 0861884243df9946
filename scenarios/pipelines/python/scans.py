"""scans.py - what the Python stream processors (quix_dedup.py,
faust_dedup.py) share: the rule a parcel scan is malformed by, and the
sd-id header a dead letter names it with."""
import json


def reason(j):
    """Why the parsed value J is not a scan, or None when it is one."""
    if not isinstance(j, dict):
        return "not a JSON object"
    if not isinstance(j.get("event_id"), str):
        return "id missing or not a string"
    if not isinstance(j.get("event_time"), str):
        return "event time missing or not a string"
    return None


def parse(value):
    """(the scan, None) for a record value that is one, (None, why) else."""
    if not value:
        return None, "empty or null value"
    try:
        j = json.loads(value)
    except ValueError:
        return None, "not JSON"
    why = reason(j)
    return (j, None) if why is None else (None, why)


def header(headers, name):
    """The value of header NAME (a list of pairs or a dict) as text, or ""."""
    items = headers.items() if isinstance(headers, dict) else (headers or ())
    for k, v in items:
        if k == name:
            return v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
    return ""
