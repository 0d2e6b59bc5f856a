"""Every service's tables on the one metadata that migrations and schema checks compare against."""

from collections.abc import MutableMapping
from typing import Any

from storage.common import keys, leases, mail
from storage.common.models import Base
from storage.common.webhooks import models as webhooks
from storage.helpdesk import models as helpdesk
from storage.phone import models as phone
from storage.photo import models as photo

METADATA = Base.metadata
MODULES = (keys, leases, mail, webhooks, phone, photo, helpdesk)
"""One entry per module that declares tables: a new service's models are added here."""


def modelled(name: str | None, type_: Any, parent_names: MutableMapping[Any, str | None]) -> bool:
    """Alembic's `include_name` when a database is compared with METADATA: False for the objects of the helpdesk's
    full-text search, which migration 0014 makes outside the models (storage/helpdesk/models.py SEARCHED)."""
    if type_ == "table":
        return name not in helpdesk.SEARCH_TABLES
    if type_ == "column":
        return not (name == "search_vector" and parent_names.get("table_name") in helpdesk.SEARCHED)
    if type_ == "index":
        return name not in helpdesk.SEARCH_INDEXES
    return True
