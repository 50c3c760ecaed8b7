"""django-allauth glue: sign-up, login, MFA and the account adapter."""
