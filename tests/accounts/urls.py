"""A test URLconf: the real project's URLs plus two role-protected pages."""

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


urlpatterns = [
    path("test-review/", reviewer_page),
    path("test-staff/", staff_page),
    *project_urlpatterns,
]
