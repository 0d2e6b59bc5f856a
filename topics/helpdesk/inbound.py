"""The helpdesk's inbound calls as its gateway and processors read them (docs/helpdesk.md, "Inbound channels"): the
provider kinds and the channel kinds, each declared here once, and each provider's payload as msgspec Structs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Generic, Literal, TypeVar, get_args

import msgspec

Provider = Literal[
    "email_a",
    "email_b",
    "email_c",
    "email_d",
    "sms",
    "sms_status",
    "business_messaging",
    "page_messaging",
    "voice",
    "commerce",
    "commerce_privacy",
    "payments",
    "payments_connect",
    "chat",
    "email_provider",
    "marketplace",
]
"""The provider kind of an inbound event: the endpoint, and the shape of the call it took. A stored event's
`provider`, the processors' handler of it, `GET /api/v1/inbound-messages`'s `provider`."""
PROVIDERS: tuple[Provider, ...] = get_args(Provider)

ChannelKindName = Literal[
    "email",
    "sms",
    "business_messaging",
    "page_messaging",
    "voice",
    "commerce",
    "payments",
    "chat",
    "email_provider",
    "marketplace",
]
"""A kind of channel (storage/helpdesk/channels.py says what each is made of)."""
CHANNEL_KINDS: tuple[ChannelKindName, ...] = get_args(ChannelKindName)

NonEmpty = Annotated[str, msgspec.Meta(min_length=1)]


class Payload(msgspec.Struct):
    """A provider's object as far as the helpdesk reads it: the fields it does not read are ignored (providers add
    fields), and one a provider does not always send has a default."""


# Inbound email: kind A (Mailgun's route forwarding), B (SendGrid's Inbound Parse), C (Postmark's inbound webhook) -----
# Kinds A and B are multipart forms whose text fields are read as they are; these are the fields that hold JSON.

MailgunHeaderValue = str | tuple[str, dict[str, str]]
"""A header's value: text, or a Content-Type's or Content-Disposition's `[value, {parameter: value}]`."""
MAILGUN_HEADERS = msgspec.json.Decoder(list[tuple[str, MailgunHeaderValue]])
"""Kind A's `message-headers`: the mail's headers, as [name, value] pairs."""


class SendgridEnvelope(Payload):
    """Kind B's `envelope`."""

    to: list[str] | str = []
    sender: str | None = msgspec.field(name="from", default=None)

    @property
    def recipients(self) -> list[str]:
        return [self.to] if isinstance(self.to, str) else self.to


class SendgridAttachment(Payload):
    filename: str | None = None
    name: str | None = None
    type: str | None = None


SENDGRID_ENVELOPE = msgspec.json.Decoder(SendgridEnvelope)
SENDGRID_CHARSETS = msgspec.json.Decoder(dict[str, str])
"""Kind B's `charsets`: the charset of each text field, by its name."""
SENDGRID_ATTACHMENTS = msgspec.json.Decoder(dict[str, SendgridAttachment])
"""Kind B's `attachment-info`: each file's, by its field's name."""


class PostmarkAddress(Payload):
    email: str = msgspec.field(name="Email", default="")


class PostmarkHeader(Payload, rename="pascal"):
    name: str = ""
    value: str = ""


class PostmarkAttachment(Payload, rename="pascal"):
    name: str = ""
    content_type: str = ""
    content: str = ""
    """Base64."""


class PostmarkMail(Payload, rename="pascal"):
    """Kind C: the mail, parsed by the provider."""

    sender: str = msgspec.field(name="From", default="")
    from_name: str = ""
    to: str = ""
    to_full: list[PostmarkAddress] = []
    cc: str = ""
    reply_to: str = ""
    original_recipient: str = ""
    """The address the provider received for."""
    subject: str = ""
    text_body: str = ""
    html_body: str = ""
    message_id: str = msgspec.field(name="MessageID", default="")
    """The provider's own id (the mail's Message-ID is among its headers)."""
    headers: list[PostmarkHeader] = []
    attachments: list[PostmarkAttachment] = []


POSTMARK_MAIL = msgspec.json.Decoder(PostmarkMail)


# SMS (Twilio's form) --------------------------------------------------------------------------------------------------


class SmsMessage(Payload):
    """An incoming SMS or MMS as the SMS provider posts it, its named fields (its media are the numbered fields
    `MediaUrl<n>` and `MediaContentType<n>`, n below `NumMedia`)."""

    sid: str = msgspec.field(name="MessageSid", default="")
    sender: str = msgspec.field(name="From", default="")
    to: str = msgspec.field(name="To", default="")
    text: str = msgspec.field(name="Body", default="")
    num_media: Annotated[int, msgspec.Meta(ge=0)] = msgspec.field(name="NumMedia", default=0)


def sms_message(form: Mapping[str, str]) -> SmsMessage:
    """The form's message (a field given empty is as absent); msgspec.ValidationError names a field that is wrong."""
    return msgspec.convert({name: value for name, value in form.items() if value}, SmsMessage, strict=False)


class SmsStatus(Payload):
    """The SMS provider's status report of a message we sent (its `StatusCallback`): the message's sid, its state
    (`queued`, `sending`, `sent`, `delivered`, `undelivered`, `failed`, `read`), and why it failed."""

    sid: str = msgspec.field(name="MessageSid", default="")
    status: str = msgspec.field(name="MessageStatus", default="")
    sender: str = msgspec.field(name="From", default="")
    error_code: str = msgspec.field(name="ErrorCode", default="")
    error_message: str = msgspec.field(name="ErrorMessage", default="")


def sms_status_of(form: Mapping[str, str]) -> SmsStatus:
    """A status report's form as an SmsStatus."""
    return msgspec.convert({name: value for name, value in form.items() if value}, SmsStatus, strict=False)


# Business messaging (the WhatsApp Cloud API's webhooks) ---------------------------------------------------------------
# A call's items are kept as they came (msgspec.Raw: each is stored as its own event, unknown fields and all) and
# read by their own Struct.


class BusinessChange(Payload):
    field: str = ""
    value: msgspec.Raw = msgspec.Raw()
    """A `messages` change's is a BusinessValue; another field's is no concern of the helpdesk. (A Raw is empty
    when absent: msgspec takes no `Raw | None`.)"""


class BusinessEntry(Payload):
    changes: list[BusinessChange] = []


class BusinessCall(Payload):
    entry: Annotated[list[BusinessEntry], msgspec.Meta(min_length=1)]


class BusinessValue(Payload):
    metadata: msgspec.Raw
    """A BusinessMetadata."""
    contacts: list[msgspec.Raw] = []
    """BusinessContacts."""
    messages: list[msgspec.Raw] = []
    """BusinessMessages."""
    statuses: list[msgspec.Raw] = []
    """BusinessStatuses."""


class BusinessMetadata(Payload):
    phone_number_id: NonEmpty
    """The channel's number: what routes the change."""


class BusinessProfile(Payload):
    name: str | None = None


class BusinessContact(Payload):
    wa_id: str = ""
    profile: BusinessProfile | None = None


class BusinessText(Payload):
    body: str | None = None


BUSINESS_MEDIA = ("image", "document", "audio", "video", "sticker")


class BusinessMedium(Payload):
    """An image, document, audio, video or sticker: by its media id (the processors fetch it: media.py)."""

    id: str | None = None
    mime_type: str | None = None
    filename: str | None = None
    caption: str | None = None
    sha256: str | None = None


class BusinessLocation(Payload):
    latitude: int | float | None = None
    longitude: int | float | None = None
    name: str | None = None
    address: str | None = None


class BusinessCardName(Payload):
    formatted_name: str | None = None


class BusinessCardPhone(Payload):
    phone: str | None = None


class BusinessCardEmail(Payload):
    email: str | None = None


class BusinessCard(Payload):
    name: BusinessCardName | None = None
    phones: list[BusinessCardPhone] = []
    emails: list[BusinessCardEmail] = []


class BusinessReply(Payload):
    title: str | None = None
    description: str | None = None


class BusinessInteractive(Payload):
    button_reply: BusinessReply | None = None
    list_reply: BusinessReply | None = None
    nfm_reply: msgspec.Raw = msgspec.Raw()
    """A flow's answer: shown as it came."""


class BusinessButton(Payload):
    text: str | None = None


class BusinessReaction(Payload):
    emoji: str | None = None


class BusinessMessage(Payload):
    """A customer's message, of any type (its content in the field named by its type)."""

    id: NonEmpty
    """The wamid: the de-duplication key."""
    sender: NonEmpty = msgspec.field(name="from")
    """The customer's wa_id."""
    type: str | None = None
    text: BusinessText | None = None
    image: BusinessMedium | None = None
    document: BusinessMedium | None = None
    audio: BusinessMedium | None = None
    video: BusinessMedium | None = None
    sticker: BusinessMedium | None = None
    location: BusinessLocation | None = None
    contacts: list[BusinessCard] = []
    interactive: msgspec.Raw = msgspec.Raw()
    """A BusinessInteractive, shown as it came when it is a reply of no kind known here."""
    button: BusinessButton | None = None
    reaction: BusinessReaction | None = None

    @property
    def medium(self) -> BusinessMedium | None:
        """The medium of an image, document, audio, video or sticker message."""
        return getattr(self, self.type) if self.type in BUSINESS_MEDIA else None


class BusinessError(Payload):
    code: int | str | None = None
    title: str | None = None


class BusinessStatus(Payload):
    """The delivery state of one of our own messages."""

    id: NonEmpty
    status: NonEmpty
    """sent | delivered | read | failed"""
    recipient_id: str | None = None
    errors: list[BusinessError] = []


class BusinessItem(Payload):
    """One item of a call, as it is stored: a message with its contact, or a status, or a change of no kind known
    here; each with the change's metadata."""

    contact: BusinessContact | None = None
    message: BusinessMessage | None = None
    status: BusinessStatus | None = None


BUSINESS_CALL = msgspec.json.Decoder(BusinessCall)
BUSINESS_VALUE = msgspec.json.Decoder(BusinessValue)
BUSINESS_METADATA = msgspec.json.Decoder(BusinessMetadata)
BUSINESS_CONTACT = msgspec.json.Decoder(BusinessContact)
BUSINESS_MESSAGE = msgspec.json.Decoder(BusinessMessage)
BUSINESS_STATUS = msgspec.json.Decoder(BusinessStatus)
BUSINESS_INTERACTIVE = msgspec.json.Decoder(BusinessInteractive)
BUSINESS_ITEM = msgspec.json.Decoder(BusinessItem)


# Page messaging (Messenger's webhooks) --------------------------------------------------------------------------------


class PageCall(Payload):
    entry: Annotated[list[msgspec.Raw], msgspec.Meta(min_length=1)]
    """PageEntries, each kept as it came when it carries no messaging event."""


class PageEntry(Payload):
    id: NonEmpty
    """The page's id: what routes the entry."""
    time: int | None = None
    messaging: list[msgspec.Raw] = []
    """PageEvents."""


class PageParty(Payload):
    id: str | None = None


class PageCoordinates(Payload):
    lat: int | float | None = None
    long: int | float | None = None


class PageAttachmentPayload(Payload):
    url: str | None = None
    coordinates: PageCoordinates | None = None


class PageAttachment(Payload):
    type: str | None = None
    payload: PageAttachmentPayload | None = None


class PageMessage(Payload):
    mid: NonEmpty
    text: str | None = None
    is_echo: bool = False
    """The page's own message, echoed: its customer is the recipient."""
    attachments: list[PageAttachment] = []


class PagePostback(Payload):
    mid: str | None = None
    title: str | None = None
    payload: str | None = None


class PageReceipt(Payload):
    """A read receipt (up to its watermark) or a delivery receipt (its mids, or up to its watermark)."""

    watermark: int | None = None
    mids: list[str] = []


class PageEvent(Payload):
    """One messaging event: a message, a postback, a read or delivery receipt, or of a kind not known here."""

    sender: PageParty | None = None
    recipient: PageParty | None = None
    timestamp: int | None = None
    message: PageMessage | None = None
    postback: PagePostback | None = None
    read: PageReceipt | None = None
    delivery: PageReceipt | None = None


class PageItem(Payload):
    """One item of a call, as it is stored: an event with its page and the entry's time, or an entry without
    messaging events."""

    event: PageEvent | None = None


PAGE_CALL = msgspec.json.Decoder(PageCall)
PAGE_ENTRY = msgspec.json.Decoder(PageEntry)
PAGE_EVENT = msgspec.json.Decoder(PageEvent)
PAGE_ITEM = msgspec.json.Decoder(PageItem)


# Voice (Dialpad's call and SMS events) --------------------------------------------------------------------------------


class VoiceParty(Payload, omit_defaults=True):
    phone_number: str | None = None
    name: str | None = None


class VoiceEvent(Payload):
    """A call event (`call_id`, `state`, ...), or with `event_type` sms an SMS event (`from_number`, ...)."""

    event_type: str | None = None
    call_id: str | int | None = None
    state: str | None = None
    direction: str | None = None
    target: VoiceParty | None = None
    """The channel's own number, on a call."""
    contact: VoiceParty | None = None
    """The caller, or the called."""
    started_at: int | float | None = None
    answered_at: int | float | None = None
    duration: int | float | None = None
    voicemail_link: str | None = None
    transcription_text: str | None = None
    id: str | int | None = None
    """An SMS event's id."""
    from_number: str | list[str] | None = None
    to_number: str | list[str] | None = None
    text: str | None = None

    @property
    def senders(self) -> list[str]:
        return _numbers(self.from_number)

    @property
    def recipients(self) -> list[str]:
        return _numbers(self.to_number)


def _numbers(given: str | list[str] | None) -> list[str]:
    """A number or a list of them, as a list."""
    return [number.strip() for number in ([given] if isinstance(given, str) else given or []) if number.strip()]


VOICE_EVENT = msgspec.json.Decoder(VoiceEvent)


# Commerce (a Shopify-shaped shop's webhooks; the topic, in a header, names the body's shape) --------------------------

ShopId = int | str
"""A shop's resource id: a number (a GraphQL id is a string)."""


class ShopCustomer(Payload):
    """A shop's customer: a `customers/*` event's body, an order's customer, a privacy request's."""

    id: ShopId | None = None
    email: str | None = None
    first_name: str | None = None
    last_name: str | None = None
    phone: str | None = None
    updated_at: str | None = None


class ShopLineItem(Payload, omit_defaults=True):
    title: str | None = None
    variant_title: str | None = None
    sku: str | None = None
    quantity: int | None = None
    price: str | None = None


class ShopOrder(Payload):
    """An `orders/*` event's body: who ordered, and the facts an agent answers about (nothing else personal)."""

    id: ShopId | None = None
    customer: ShopCustomer | None = None
    email: str | None = None
    contact_email: str | None = None
    phone: str | None = None
    name: str | None = None
    order_number: int | None = None
    total_price: str | None = None
    subtotal_price: str | None = None
    total_tax: str | None = None
    currency: str | None = None
    financial_status: str | None = None
    fulfillment_status: str | None = None
    cancelled_at: str | None = None
    cancel_reason: str | None = None
    closed_at: str | None = None
    created_at: str | None = None
    updated_at: str | None = None
    line_items: list[ShopLineItem] = []


class ShopDataRequest(Payload):
    id: ShopId | None = None


class ShopPrivacyRequest(Payload):
    """A privacy topic's body: `customers/data_request`, `customers/redact` or `shop/redact`."""

    shop_id: ShopId | None = None
    shop_domain: str | None = None
    customer: ShopCustomer | None = None
    data_request: ShopDataRequest | None = None
    orders_requested: list[ShopId] = []
    orders_to_redact: list[ShopId] = []


ShopEvent = ShopOrder | ShopCustomer | ShopPrivacyRequest
SHOP_ORDER: msgspec.json.Decoder[ShopEvent] = msgspec.json.Decoder(ShopOrder)
SHOP_CUSTOMER: msgspec.json.Decoder[ShopEvent] = msgspec.json.Decoder(ShopCustomer)
SHOP_PRIVACY_REQUEST: msgspec.json.Decoder[ShopEvent] = msgspec.json.Decoder(ShopPrivacyRequest)
SHOP_EVENTS = {
    "orders/create": SHOP_ORDER,
    "orders/updated": SHOP_ORDER,
    "customers/create": SHOP_CUSTOMER,
    "customers/update": SHOP_CUSTOMER,
}
"""The events endpoint's topics, and the shape of each one's body."""
SHOP_PRIVACY_EVENTS = dict.fromkeys(("customers/data_request", "customers/redact", "shop/redact"), SHOP_PRIVACY_REQUEST)
"""The privacy endpoint's topics, and the shape of each one's body."""


# Payments (Stripe's events) -------------------------------------------------------------------------------------------

StripeObjectT = TypeVar("StripeObjectT")


class StripeRef(Payload):
    """An object by its id (an event's object when its id is all that is read, or an expanded reference)."""

    id: str | None = None


class StripeObject(StripeRef):
    customer: str | StripeRef | None = None
    """The Stripe customer's id, or the customer expanded."""

    @property
    def customer_id(self) -> str | None:
        return (self.customer.id if isinstance(self.customer, StripeRef) else self.customer) or None


class SubscriptionDetails(Payload):
    metadata: dict[str, str] | None = None


class InvoiceParent(Payload):
    subscription_details: SubscriptionDetails | None = None


class StripePrice(StripeRef):
    """A subscription item's price: its id, and the metadata an operator may have given it (`plan`)."""

    metadata: dict[str, str] | None = None


class SubscriptionItem(Payload):
    price: StripePrice | None = None


class SubscriptionItems(Payload):
    data: list[SubscriptionItem] = []


class BillingObject(StripeObject):
    """The object of one of the platform's billing events (a checkout session, a subscription, an invoice): what
    names its organization, its state, and (a subscription's items) the prices it is billed at."""

    client_reference_id: str | None = None
    metadata: dict[str, str] | None = None
    items: SubscriptionItems | None = None
    """A subscription's items, each with its price (what plan it is)."""
    subscription_details: SubscriptionDetails | None = None
    """An invoice's, in older API versions (newer ones: `parent`)."""
    parent: InvoiceParent | None = None
    payment_status: str | None = None
    status: str | None = None


class DisputeEvidence(Payload):
    customer_email_address: str | None = None
    customer_name: str | None = None


class DisputeEvidenceDetails(Payload):
    due_by: int | None = None


class Dispute(StripeObject):
    """A connected account's dispute (`charge.dispute.*`)."""

    amount: int | None = None
    """In the currency's smallest unit."""
    currency: str | None = None
    reason: str | None = None
    status: str | None = None
    charge: str | None = None
    payment_intent: str | None = None
    evidence: DisputeEvidence | None = None
    evidence_details: DisputeEvidenceDetails | None = None


class StripeData(Payload, Generic[StripeObjectT]):
    object: StripeObjectT


class StripeEvent(Payload, Generic[StripeObjectT]):
    id: str
    type: str
    data: StripeData[StripeObjectT]
    created: int | None = None
    livemode: bool = False
    account: str | None = None
    """The connected account an event of Connect is about."""


BILLING_EVENT = msgspec.json.Decoder(StripeEvent[BillingObject])
CONNECTED_EVENT = msgspec.json.Decoder(StripeEvent[StripeRef])
DISPUTE_EVENT = msgspec.json.Decoder(StripeEvent[Dispute])


# Chat (Slack's Events API) --------------------------------------------------------------------------------------------


class ChatFile(Payload):
    url_private: str | None = None
    mimetype: str | None = None
    name: str | None = None
    title: str | None = None


class ChatProfile(Payload):
    real_name: str | None = None
    display_name: str | None = None


class ChatEvent(Payload):
    """The event of a callback: a message or an app mention as the processors read it; any other type is recorded."""

    type: str
    channel: str | None = None
    user: str | None = None
    text: str | None = None
    ts: str | None = None
    thread_ts: str | None = None
    subtype: str | None = None
    bot_id: str | None = None
    files: list[ChatFile] = []
    user_profile: ChatProfile | None = None


class ChatTeam(Payload):
    team_id: str | None = None
    """What routes the call (a url_verification carries none: the URL's `?team=` does)."""


class ChatVerification(ChatTeam, tag_field="type", tag="url_verification", kw_only=True):
    """The check of the request URL: answered with its challenge, and stored nowhere."""

    challenge: NonEmpty


class ChatCallback(ChatTeam, tag_field="type", tag="event_callback", kw_only=True):
    event_id: NonEmpty
    """The same on a retry: the de-duplication key."""
    event: ChatEvent


CHAT = msgspec.json.Decoder(ChatVerification | ChatCallback)
CHAT_CALLBACK = msgspec.json.Decoder(ChatCallback)
CHAT_TEAM = msgspec.json.Decoder(ChatTeam)


# Email sending provider (SendGrid's Event Webhook) --------------------------------------------------------------------


class DeliveryEvent(Payload):
    """One event of the provider that sends the helpdesk's mail, on one of those mails."""

    event: str
    """processed | delivered | deferred | bounce | dropped | spamreport | open | click | unsubscribe | ..."""
    email: str
    sg_event_id: str | None = None
    smtp_id: str | None = msgspec.field(name="smtp-id", default=None)
    """The Message-ID of the helpdesk's mail."""
    message_id: str | None = None
    """The same, as the custom argument the helpdesk may give instead."""
    status: str | None = None
    reason: str | None = None
    response: str | None = None


DELIVERY_EVENTS = msgspec.json.Decoder(Annotated[list[msgspec.Raw], msgspec.Meta(min_length=1)])
"""A call's body: its events, each read on its own (and stored as its own inbound event)."""
DELIVERY_EVENT = msgspec.json.Decoder(DeliveryEvent)


# Marketplace (Amazon SNS's HTTP(S) deliveries) ------------------------------------------------------------------------


class SnsMessage(Payload, rename="pascal", tag_field="Type", kw_only=True):
    """What every SNS message carries: what routes it, and what its signature is checked with."""

    message: str
    message_id: str
    timestamp: str
    topic_arn: str
    signature: str
    signature_version: str
    signing_cert_url: str = msgspec.field(name="SigningCertURL")

    @property
    def type(self) -> str:
        """`Type`: what told the message's class."""
        return str(self.__struct_config__.tag)


class SnsNotification(SnsMessage, tag="Notification", kw_only=True):
    """`message` is the marketplace's notice: `MARKETPLACE_NOTICE` reads it."""

    subject: str | None = None


class SnsConfirmation(SnsMessage, kw_only=True):
    subscribe_url: str = msgspec.field(name="SubscribeURL")
    token: str


class SnsSubscriptionConfirmation(SnsConfirmation, tag="SubscriptionConfirmation", kw_only=True):
    pass


class SnsUnsubscribeConfirmation(SnsConfirmation, tag="UnsubscribeConfirmation", kw_only=True):
    pass


SNS_MESSAGE = msgspec.json.Decoder(SnsNotification | SnsSubscriptionConfirmation | SnsUnsubscribeConfirmation)

Amount = str | int | float


class MarketplaceBuyer(Payload):
    id: str | int | None = None
    email: str | None = None
    name: str | None = None


class MarketplaceItem(Payload, omit_defaults=True):
    sku: str | None = None
    title: str | None = None
    quantity: int | None = None
    price: Amount | None = None


class MarketplaceTotal(Payload, omit_defaults=True):
    amount: Amount | None = None
    currency: str | None = None


class MarketplaceNotice(Payload, tag_field="type", kw_only=True):
    order_id: NonEmpty
    marketplace: str | None = None
    status: str | None = None
    buyer: MarketplaceBuyer | None = None
    items: list[MarketplaceItem] | None = None
    updated_at: str | None = None


class MarketplaceOrder(MarketplaceNotice, tag="order", kw_only=True):
    total: MarketplaceTotal | None = None
    purchased_at: str | None = None


class MarketplaceReturn(MarketplaceNotice, tag="return", kw_only=True):
    return_id: NonEmpty
    reason: str | None = None
    comment: str | None = None


MARKETPLACE_NOTICE = msgspec.json.Decoder(MarketplaceOrder | MarketplaceReturn)
