"""Every service's tables on the one metadata that migrations and schema checks compare against."""

from storage.common import keys
from storage.common.models import Base
from storage.common.webhooks import models as webhooks
from storage.helpdesk import models as helpdesk
from storage.phone import models as phone
from storage.photo import models as photo

METADATA = Base.metadata
MODULES = (keys, webhooks, phone, photo, helpdesk)
"""One entry per module that declares tables: a new service's models are added here."""
