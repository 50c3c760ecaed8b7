"""Build the POST data of a Django admin change form as it stands, to change a field or two."""

from __future__ import annotations

from django.forms import CheckboxInput, MultiWidget


def change_form_data(page) -> dict[str, str]:
    """The main form's current values from a GET of an admin change page (inlines not included)."""
    form = page.context["adminform"].form
    data = {}
    for field_name, field in form.fields.items():
        value = form[field_name].value()
        if isinstance(field.widget, MultiWidget):  # The split date and time of a datetime.
            for index, part in enumerate(field.widget.decompress(value)):
                data[f"{field_name}_{index}"] = part
        elif isinstance(field.widget, CheckboxInput):  # A ticked box posts "on"; unticked, nothing.
            if value:
                data[field_name] = "on"
        elif value is not None:
            data[field_name] = field.widget.format_value(value) or ""
    return data
