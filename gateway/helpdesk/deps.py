"""What every helpdesk route and procedure is given: the gateway's parts, wired once by the launcher."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.helpdesk.accounts.signin import Accounts
from gateway.helpdesk.inbound.common import Inbound
from operations.helpdesk.desk import Helpdesk


@dataclass(frozen=True)
class HelpdeskGateway:
    desk: Helpdesk
    """The operations' parts (operations/helpdesk)."""
    accounts: Accounts
    """Sign-in, sessions and their mail."""
    inbound: Inbound
    """The inbound webhook endpoints' shared steps (gateway/helpdesk/inbound)."""
