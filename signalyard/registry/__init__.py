"""The service registry: one module per service describes what the CLI needs to know of it (its name, settings and
operator commands) and names its wiring in `signalyard/services/`, which only a running command imports. Adding a
service is adding its module here."""

from signalyard.registry import helpdesk, phone, photo
from signalyard.service import Service

SERVICES: dict[str, Service] = {service.name: service for service in (phone.SERVICE, photo.SERVICE, helpdesk.SERVICE)}
