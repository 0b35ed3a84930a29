"""The discussion panel of an item (workspace and adjudication pages), loaded and posted by htmx."""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render

from core.http import refuse

from ..blind import NO_ITEM
from ..views.access import item_in, project_for
from .models import COMMENT_MAX
from .selectors import item_comments
from .services import CommentsClosed, ItemUnreachable, comment_access, comment_post, notifications_read


@login_required
def panel(request, project_id: int, item_id: int):
    """GET: the item's comments and the form; POST: post one and answer with the panel. Where the
    discussion is still closed to the user the panel says when it opens (a POST is refused)."""
    project, role = project_for(request, project_id)
    item = item_in(project, item_id, role=role, user=request.user)  # the blind reach rule: else a missing item
    page = {"project": project, "item": item, "closed": "", "error": "", "text": "", "max": COMMENT_MAX,
            "standalone": not request.htmx}
    try:
        comment_access(item=item, user=request.user)
    except ItemUnreachable:
        raise Http404(NO_ITEM) from None
    except CommentsClosed as exc:
        if request.method == "POST":
            return refuse(request, str(exc))
        page["closed"] = str(exc)
        return render(request, _template(request), page)
    status = 200
    if request.method == "POST":
        try:
            comment_post(item=item, author=request.user, text=request.POST.get("text", ""),
                         site=request.build_absolute_uri("/"))
        except ValueError as exc:
            page.update(error=str(exc).removeprefix("text: "), text=request.POST.get("text", ""))
            status = 422
    notifications_read(user=request.user, item=item)
    page["comments"] = item_comments(item=item)
    if request.method == "POST" and not request.htmx and status == 200:
        return redirect("annotation:comments", project_id=project.pk, item_id=item.pk)
    return render(request, _template(request), page, status=status)


def _template(request) -> str:
    """htmx swaps the panel; without JavaScript the panel is a page of its own."""
    return "annotation/_comments.html" if request.htmx else "annotation/comments_page.html"
