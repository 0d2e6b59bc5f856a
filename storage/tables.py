"""Every service's tables on the one metadata that migrations and schema checks compare against."""

from storage.common import keys
from storage.common.models import Base
from storage.phone import models as phone

METADATA = Base.metadata
MODULES = (keys, phone)
"""One entry per module that declares tables: a new service's models are added here."""
