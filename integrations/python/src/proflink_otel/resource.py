"""The SDK's resource, published through proflink_set_resource so that the OTel process context
profilers read carries this SDK's service.instance.id and telemetry.sdk.* (profiles then join
this process's other telemetry) instead of proflink's own defaults."""
import re
from urllib.parse import quote

from ._native import native

# OTEL_RESOURCE_ATTRIBUTES syntax: "k=v,k2=v2", values percent-encoded. A key that the syntax
# cannot carry is left out rather than mangled.
_KEY_OK = re.compile(r"^[^\s,=%]+$")
_SDK_DEFAULTS = {"telemetry.sdk.language": "python", "telemetry.sdk.name": "opentelemetry"}

_published = None


def resource_string(attributes):
    parts = []
    for k, v in attributes.items():
        if v is None or not isinstance(k, str) or not _KEY_OK.match(k):
            continue
        if isinstance(v, (list, tuple)):
            v = ",".join(str(x) for x in v)
        elif isinstance(v, bool):
            v = "true" if v else "false"
        parts.append(f"{k}={quote(str(v), safe='')}")
    return ",".join(parts)


def publish_resource(resource):
    """Publishes ``resource`` (an SDK Resource) unless this very resource already was. Returns
    proflink's answer (0 ok, -1 refused) or None when nothing was called."""
    global _published
    if native is None or resource is None or resource is _published:
        return None
    _published = resource
    try:
        attrs = dict(resource.attributes)
    except Exception:  # a foreign Resource: never let it break span processing
        return None
    # The SDK leaves telemetry.sdk.* out of a resource built without its defaults; they still
    # describe this process better than proflink's own ("cpp", "proflink").
    s = resource_string({**_SDK_DEFAULTS, **attrs})
    return native.set_resource(s.encode()) if s else None
