"""The OpenAPI schema's operation descriptions: what an API user reads in the docs.

drf-spectacular takes a view's description from the first docstring along its class's MRO, so
every view without one of its own inherited a base class's note for developers ("Give each
view's nested serializers a unique OpenAPI component name"). Here an operation is described
only by its own handler's docstring or its own class's docstring; base classes and mixins
keep their developer notes without them reaching the docs.
"""

import inspect

from drf_spectacular.openapi import AutoSchema


class OwnDocstringSchema(AutoSchema):
    def get_description(self) -> str:
        view_class = self.view.__class__
        handler_name = getattr(self.view, "action", None) or self.method.lower()
        handler = view_class.__dict__.get(handler_name)
        for doc in (getattr(handler, "__doc__", None), view_class.__dict__.get("__doc__")):
            if doc:
                return inspect.cleandoc(doc)
        return ""
