"""Invitations by e-mail through the API: list and invite (``/api/projects/<id>/invitations/``),
resend and revoke one. The project's curators only; the link's secret appears once, in the
answer that made it (a creation or a resend), as on the members page."""

from django.shortcuts import get_object_or_404
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from benchmark.api.common import GenericApi, LabellerWrites, ListApi, input_of

from ..models import Invitation, Role
from ..services.invitations import INVITEES_MAX, invitation_resend, invitation_revoke, invitations_create, invitee_of
from .views import curated_project


class InvitationSerializer(serializers.ModelSerializer):
    username = serializers.CharField(source="user.username", default=None, help_text="who joined through it")

    class Meta:
        model = Invitation
        fields = ["id", "email", "name", "role", "status", "send_error", "send_count", "expires_at", "sent_at",
                  "opened_at", "joined_at", "revoked_at", "username"]


class _Curated:
    def get_permissions(self):  # project curators (not only global ones); the service checks again
        return [IsAuthenticated(), LabellerWrites()]

    def link_for(self, token: str) -> str:
        return self.request.build_absolute_uri(reverse("invitation", kwargs={"token": token}))


class ProjectInvitationListApi(_Curated, ListApi):
    class InputSerializer(serializers.Serializer):
        emails = serializers.ListField(
            child=serializers.CharField(max_length=400), min_length=1, max_length=INVITEES_MAX,
            help_text='addresses, each "a@lab.org" or "Ada Lovelace <ada@lab.org>"')
        role = serializers.ChoiceField(choices=Role.choices, default=Role.ANNOTATOR)

    OutputSerializer = InvitationSerializer
    filter_fields = {"status": "status"}
    strict_query_params = True
    ordering_fields = ("created_at", "email", "status")

    def get_queryset(self):
        project = curated_project(self.request, self.kwargs["pk"], action="invite people")
        return Invitation.objects.filter(project=project).select_related("user").order_by("-created_at", "-id")

    @extend_schema(request=InputSerializer, responses={201: InvitationSerializer(many=True)})
    def post(self, request, pk: int):
        """One invitation per address, each e-mailed its one-time link (``link`` in the answer, shown
        only here). A malformed, repeated, already invited or member's address: 400 naming each,
        nothing stored."""
        project = curated_project(request, pk, action="invite people")
        data = input_of(self, request)
        invitees = [invitee_of(entry) for entry in data["emails"]]  # the service names each bad address
        made = invitations_create(project=project, invitees=invitees, role=data["role"], actor=request.user,
                                  link_for=self.link_for)
        body = [{**InvitationSerializer(invitation).data, "link": link} for invitation, link in made]
        return Response(body, status=status.HTTP_201_CREATED)


class ProjectInvitationActionApi(_Curated, GenericApi):
    OutputSerializer = InvitationSerializer
    action_name = ""

    def _invitation(self, request, pk: int, invitation_id: int) -> Invitation:
        project = curated_project(request, pk, action="invite people")
        return get_object_or_404(Invitation.objects.select_related("project"), project=project, pk=invitation_id)


class ProjectInvitationResendApi(ProjectInvitationActionApi):
    @extend_schema(request=None, responses={200: InvitationSerializer})
    def post(self, request, pk: int, invitation_id: int):
        """A new link (the previous one stops working) and expiry, e-mailed again; ``link`` shown only here."""
        invitation = self._invitation(request, pk, invitation_id)
        link = invitation_resend(invitation=invitation, actor=request.user, link_for=self.link_for)
        return Response({**InvitationSerializer(invitation).data, "link": link})


class ProjectInvitationRevokeApi(ProjectInvitationActionApi):
    @extend_schema(request=None, responses={200: InvitationSerializer})
    def post(self, request, pk: int, invitation_id: int):
        """Its link stops working at once (a member who joined stays: remove them from the members)."""
        invitation = invitation_revoke(invitation=self._invitation(request, pk, invitation_id), actor=request.user)
        return Response(InvitationSerializer(invitation).data)
