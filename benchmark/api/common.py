"""What every API class shares: permissions, list filtering/ordering, service-error translation.

Views only translate: they validate the shape of the input with a nested ``InputSerializer``,
call one service or selector, and render the result with a nested ``OutputSerializer``.
Services raise plain exceptions (``ValueError`` naming the field, ``PermissionError``,
``StaleEditError`` ...); ``ServiceErrorsMixin`` maps them to HTTP once, here.
"""

import re

from django.core.exceptions import FieldDoesNotExist, ObjectDoesNotExist
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import IntegerField
from django.http import Http404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema_serializer
from rest_framework import exceptions, generics, permissions, status
from rest_framework.filters import BaseFilterBackend
from rest_framework.response import Response
from rest_framework.views import APIView

from core.accounts import is_global_curator, is_viewer
from core.errors import ConflictError
from benchmark.importers.base import ImportFailed
from benchmark.services.history import StaleEditError
from benchmark.services.tasksets import TaskSetError
from core.bounded import whole_number
from core.converters import MAX_ID
from core.broker import BrokerUnavailable

_FIELD_PREFIX = re.compile(r"^([a-z_][a-z0-9_]*): (.+)$", re.DOTALL)


# --- Permissions ------------------------------------------------------------------------------


class CuratorWrites(permissions.BasePermission):
    """Anyone signed in reads; only curators (and superusers) change benchmark and scoring data."""

    message = "Only curators may change this."

    def has_permission(self, request, view) -> bool:
        if request.method in permissions.SAFE_METHODS:
            return True
        return is_global_curator(request.user)


class LabellerWrites(permissions.BasePermission):
    """Viewers never write; annotators and curators may, and the services check project roles."""

    message = "Viewers have read-only access."

    def has_permission(self, request, view) -> bool:
        if request.method in permissions.SAFE_METHODS or request.user.is_superuser:
            return True
        return not is_viewer(request.user)


# --- Service errors ---------------------------------------------------------------------------


def field_errors(message: str) -> dict:
    """``"name: required"`` → ``{"name": ["required"]}``; otherwise ``{"detail": message}``."""
    match = _FIELD_PREFIX.match(message)
    if match:
        return {match.group(1): [match.group(2)]}
    return {"detail": message}


class ServiceErrorsMixin:
    """Translate the services' exceptions into HTTP responses with messages that say what to do."""

    def handle_exception(self, exc):
        if isinstance(exc, StaleEditError):
            return Response(
                {"detail": str(exc), "expected_version": exc.expected, "current_version": exc.actual},
                status=status.HTTP_409_CONFLICT,
            )
        if isinstance(exc, ImportFailed):
            body = {"detail": str(exc), "file": exc.file, "line": exc.line, "column": exc.column, "field": exc.field}
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        if isinstance(exc, DjangoValidationError):
            body = exc.message_dict if hasattr(exc, "error_dict") else {"detail": "; ".join(exc.messages)}
            return Response(body, status=status.HTTP_400_BAD_REQUEST)
        if isinstance(exc, (TaskSetError, ValueError)):
            return Response(field_errors(str(exc)), status=status.HTTP_400_BAD_REQUEST)
        if isinstance(exc, BrokerUnavailable):  # the work is saved; it is sent once the broker answers
            body = {"detail": str(exc), "runs": exc.run_ids}
            return Response(body, status=status.HTTP_503_SERVICE_UNAVAILABLE, headers={"Retry-After": "30"})
        if isinstance(exc, ConflictError):
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        if isinstance(exc, PermissionError):
            exc = exceptions.PermissionDenied(str(exc))
        elif isinstance(exc, ObjectDoesNotExist):
            exc = Http404(str(exc))
        return super().handle_exception(exc)


# --- List filtering and ordering --------------------------------------------------------------


def _is_integer(model, lookup: str) -> bool:
    """Whether ``lookup`` (``task_id``, ``item__project_id``) ends at an integer column."""
    field = None
    for part in lookup.split("__"):
        if field is not None:
            model = field.related_model
        if model is None:
            return False
        try:
            field = model._meta.get_field(part)
        except FieldDoesNotExist:
            return False
    if field is not None and field.many_to_one:
        field = field.target_field
    return isinstance(field, IntegerField)


def _integer(param: str, value: str) -> int:
    """An integer filter value the database can compare, or a 400 naming the parameter."""
    try:
        number = whole_number(param, value)  # ASCII digits only (int() takes "٣" and "1_0")
    except ValueError:
        raise exceptions.ValidationError({param: [f"{value!r} is not a valid value for {param}"]}) from None
    if not -MAX_ID - 1 <= number <= MAX_ID:
        raise exceptions.ValidationError({param: [f"{value!r} is out of range for {param}"]})
    return number


class QueryFilterBackend(BaseFilterBackend):
    """Exact-match filters and ``?ordering=`` from two view attributes, with no extra dependency.

    ``filter_fields`` maps a query parameter to an ORM lookup (``{"task": "task_id"}``);
    ``filter_values`` maps a parameter to what reads its value (``{"action": AuditAction.parse}``:
    old spellings too), a ``ValueError`` being a 400 naming the parameter;
    ``ordering_fields`` lists what ``?ordering=a,-b`` may name. A value the lookup cannot take
    (``?task=abc``) or an unknown ordering is a 400 naming the parameter. A view with
    ``strict_query_params = True`` also refuses any parameter it does not know (its filters,
    ``extra_query_params`` it reads itself, ordering, page, format) instead of ignoring it, so a
    misspelt filter cannot silently return everything.
    """

    ALWAYS_KNOWN = frozenset({"ordering", "page", "format"})

    def filter_queryset(self, request, queryset, view):
        if getattr(view, "strict_query_params", False):
            known = self.ALWAYS_KNOWN | set(getattr(view, "filter_fields", {})) | set(
                getattr(view, "extra_query_params", ()))
            unknown = sorted(set(request.query_params) - known)
            if unknown:
                raise exceptions.ValidationError({
                    name: [f"unknown filter {name!r}; known: {', '.join(sorted(known))}"] for name in unknown
                })
        for param, lookup in getattr(view, "filter_fields", {}).items():
            value = request.query_params.get(param)
            if value in (None, ""):
                continue
            if lookup.endswith("__isnull"):
                value = value.lower() in ("1", "true", "yes")
            elif _is_integer(queryset.model, lookup):
                value = _integer(param, value)
            elif param in getattr(view, "filter_values", {}):
                try:
                    value = view.filter_values[param](value)
                except ValueError as exc:
                    raise exceptions.ValidationError({param: [str(exc)]}) from None
            try:
                queryset = queryset.filter(**{lookup: value})
            except (ValueError, TypeError, DjangoValidationError):
                raise exceptions.ValidationError({param: [f"{value!r} is not a valid value for {param}"]}) from None
        ordering = request.query_params.get("ordering", "")
        if ordering:
            allowed = getattr(view, "ordering_fields", ())
            fields = [part.strip() for part in ordering.split(",") if part.strip()]
            unknown = [name for name in fields if name.lstrip("-") not in allowed]
            if unknown:
                raise exceptions.ValidationError(
                    {"ordering": [f"cannot order by {', '.join(unknown)}; allowed: {', '.join(allowed) or 'nothing'}"]}
                )
            queryset = queryset.order_by(*fields, "pk")
        return queryset

    def get_schema_operation_parameters(self, view):
        params = [
            {
                "name": param, "required": False, "in": "query", "schema": {"type": "string"},
                "description": f"only rows whose {lookup.replace('__', '.')} equals this",
            }
            for param, lookup in getattr(view, "filter_fields", {}).items()
        ]
        if getattr(view, "ordering_fields", ()):
            params.append({
                "name": "ordering", "required": False, "in": "query", "schema": {"type": "string"},
                "description": "comma-separated, '-' for descending; one of: " + ", ".join(view.ordering_fields),
            })
        return params


# --- Base classes -----------------------------------------------------------------------------


class _NamedSerializers:
    """Give each view's nested serializers a unique OpenAPI component name (``TaskListOutput``)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        stem = cls.__name__.removesuffix("Api")
        for attr in ("InputSerializer", "OutputSerializer"):
            serializer = cls.__dict__.get(attr)
            if serializer is not None:
                extend_schema_serializer(component_name=f"{stem}{attr.removesuffix('Serializer')}")(serializer)


class Api(_NamedSerializers, ServiceErrorsMixin, APIView):
    permission_classes = [permissions.IsAuthenticated, CuratorWrites]


class GenericApi(_NamedSerializers, ServiceErrorsMixin, generics.GenericAPIView):
    permission_classes = [permissions.IsAuthenticated, CuratorWrites]
    filter_backends = [QueryFilterBackend]
    filter_fields: dict[str, str] = {}
    ordering_fields: tuple[str, ...] = ()

    def get_serializer_class(self):
        return self.OutputSerializer


class ListApi(GenericApi, generics.ListAPIView):
    pass


class DetailApi(GenericApi, generics.RetrieveAPIView):
    pass


def input_of(view, request, serializer_class=None, **kwargs) -> dict:
    serializer = (serializer_class or view.InputSerializer)(data=request.data, **kwargs)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


HISTORY_PARAM = OpenApiParameter("history", OpenApiTypes.BOOL, description="include revision history")
