"""The service registry: one module per service says everything the launcher needs to run it. Adding a service is
adding its module here."""

from signalyard.service import Service
from signalyard.services import phone, photo

SERVICES: dict[str, Service] = {service.name: service for service in (phone.SERVICE, photo.SERVICE)}
