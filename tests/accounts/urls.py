"""A test URLconf: the real project's URLs plus two role-protected pages and a crashing one."""

from django.http import HttpRequest, HttpResponse
from django.urls import path

from accounts.roles import require_reviewer, require_staff
from memoryhub.urls import urlpatterns as project_urlpatterns


@require_reviewer
def reviewer_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("review queue")


@require_staff
def staff_page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("staff only")


def crashing_page(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug in a view")


handler500 = "memoryhub.unavailable.server_error"

urlpatterns = [
    path("test-crash/", crashing_page),
    path("test-review/", reviewer_page),
    path("test-staff/", staff_page),
    *project_urlpatterns,
]
