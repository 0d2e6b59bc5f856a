"""Caller-ID reading and name matching: owns how a carrier CNAM string is classified and compared with a supplied name.

Everything here is a pure function of its arguments (no I/O, no clock, no database); the lookup
tables are built once at import.

Reading a caller-ID (`read_caller_id`)
--------------------------------------
* A provider error code for the caller-name lookup wins: state ``error``, name ``None``.
* ``None``, ``""`` or whitespace: state ``unavailable``.
* A generic string the carrier sends when no name is on file: state ``placeholder``. These are
  the phrases in ``_GENERIC_PHRASES`` (WIRELESS CALLER, UNKNOWN NAME, NAME UNAVAILABLE, PRIVATE
  NUMBER, CALLER ID BLOCKED, NON-PUBLISHED, OUT OF AREA, TOLL FREE CALLER, PAYPHONE, VOIP CALLER,
  ...; its comment names the sources) in any case and punctuation ("Out-of-Area"), such a phrase cut
  at 15 characters with at least 3 letters of its last word left ("CALLER ID BLOCK", "NAME NOT
  AVAILA"), anything without a letter (a bare phone number or digits; digits are ignored
  everywhere, so "CALLER5551234" is CALLER), a single letter beside a phone number of 7+ digits
  ("V4155551234"), a generic phrase followed by a state code ("CELL PHONE TX"), a state name alone
  ("CALIFORNIA", "NEW YORK") and the carrier rate centre ``CITY ST``, also written ``CITY STATE``
  ("AUSTIN TEXAS") or ``ST CITY`` ("TX AUSTIN"). Phrases that are also names of people or businesses
  are not listed: "WIRELESS WORLD", "TOLL BROTHERS", "H&R BLOCK" and a cut "ANONYMOUS CONTE" stay
  available, and so do the state names GEORGIA, VIRGINIA, WASHINGTON and MONTANA.
* Anything else: state ``available``.

The ``CITY ST`` rule. A string whose last word is a USPS state or territory code (military codes
excluded) is a rate centre, hence a placeholder, when one of these holds, checked in order:
(1) the city and state form a known rate centre from the compact list ``_RATE_CENTRES``
("AUSTIN TX", "MOBILE AL"), or the "city" is a generic phrase ("CELL PHONE TX"); otherwise it is
read as a name when (2) the code is also a business designation (CO, PA, MD: "ACME CO",
"SMITH JONES PA") or (3) the code is itself a given name or nickname in the ``nicknames`` package
(AL, VI: "SMITH AL" is Al Smith); otherwise it is a rate centre when (4) it starts with a place word
such as SAN, FORT, NEW, LAKE followed by at least one more word ("SANTA CLARA CA"); otherwise it is
read as a name when (5) the string is cut at 15 characters, two or more words stand before the code,
none of them a word that ends place names (BEACH, CITY, CREEK, PARK, HTS, ... in ``_CITY_WORDS``),
and the code is the first two letters of a given name: a double surname whose given name was cut
("GARCIA-LOPEZ MA", "GARCIA LOPEZ MA"; "CEDAR RAPIDS IA" stays a rate centre); or when (6) any word
before the code is a given name or nickname ("JOHN MA", "SMITH JOHN MD"); and otherwise (7) it is a
rate centre ("PLEASANTON CA"). A state written in full goes through the same checks except (2),
(3) and (5), which are about two-letter codes. ``ST CITY`` counts only when it is a known rate
centre or a place-word city ("CA SAN JOSE") and the code is not DE, LA, a designation or a given
name, since many names start with such a word ("MA WEI", "DE LEON JUAN"). The trade-off is
deliberate: an unlisted city that is also a given name read with an AL/VI code ("SELMA AL") comes
out ``available``, while a person whose two-letter first name is a state code without being a known
nickname ("NGUYEN MI") comes out ``placeholder``. The package also lists a few surnames as given
names (SMITH, WILSON), so "SMITH CA" reads as a name.

Abbreviated place words. FT, MT and PT (fort, mount, port or point) begin no name, so a city that starts with one is a
rate centre before check (2): "FT COLLINS CO" and "MT AIRY MD" are places, not a company and a doctor. N, S, E, W (the
USPS Publication 28 directionals) and PT are place words for check (4) ("N LAS VEGAS NV", "E ST LOUIS IL"). A rate
centre cut at 15 characters may keep one letter of its state code or none. It is a placeholder when it is a listed rate
centre, or when it starts with a place word and names no person: no given name among its words except after a saint's
or SAN/SANTA ("ST PETERSBURG F", "FT LAUDERDALE F", "PORT ST LUCIE F"; "ST CLAIR MARY A" is Mary A. St Clair). With the
state cut off entirely it must start with FT, MT or PT, or with another place word followed by one ("S SAN
FRANCISCO"); a single-letter direction counts only before a place word or a listed city ("N LITTLE ROCK A"), since a
person's initial stands there too ("S MARTINEZ-LOPE"). ST, PORT, MOUNT, LAKE and WEST also begin surnames, so "ST JOHN
MARY", "WEST CHRISTOPHE" and "MOUNT EMILY" stay names.

Matching (`match_name`)
-----------------------
Only an ``available`` caller-ID is compared. Any other state gives ``unavailable`` with score
``None`` and one reason (``caller_id_placeholder``, ``caller_id_unavailable``,
``caller_id_error``). A missing caller-ID name is never a mismatch.

Both names are normalised first: Unicode compatibility decomposition with accents dropped,
case folded, apostrophes removed (O'BRIEN = OBRIEN), every other punctuation mark a word break.

Persons. CNAM word order is not trusted (``LAST FIRST``, ``LAST,FIRST``, ``FIRST LAST`` and
``LAST FIRST M`` all occur), so each supplied part (given name, surname, middle names) is looked
for among the CNAM words. A word relates to a part as exact > truncated (the CNAM is exactly
15 characters and its last word is a prefix of at least 3 letters, or a prefix of 2 letters of the
given name once the surname is matched in full, below) > nickname (given names only:
one is listed as a nickname of the other in the ``nicknames`` package, either direction; two
nicknames of the same name such as Jim/Jimmy are not related, to avoid chains) > typo (rapidfuzz
``ratio`` >= 80 or one adjacent transposition, words of 3+ letters) > initial. Surname particles
(de, la, van, ...) join the surname, a hyphenated part is also tried whole and piece by piece, and
a supplied middle name may stand in for the surname (Hispanic double surnames).

Double surnames. When the CNAM holds a supplied double surname whole, in order, as two or more
words (the last may be a cut-off prefix of 3+ letters: "RODRIGUEZ HERNA"), all those words are the
surname and none can pose as the given name; a cut-off prefix counts as truncated. A double surname
is a hyphenated or particle surname ("Garcia-Lopez", "de la Cruz"), or, only when the run reaches
the end of a cut CNAM, the last middle name and the surname ("Ana Sofia Rodriguez Hernandez"), since
a middle word is as often a second given name. "RODRIGUEZ HERNA" holds the surname only, and "ADAM
GARCIA-LOP" is another given name on the same surname. A double surname found whole also settles
the word order: the reversed reading below is not tried.

Given name cut to two letters. In a 15-character CNAM whose surname (single or double) is matched
in full, that is exactly, not cut, typo'd or an initial, a cut-off last word of 2 letters that
starts the supplied given name (written whole) counts as that given name truncated:
"GARCIA-LOPEZ MA" and "GARCIA LOPEZ MA" for Maria Garcia-Lopez are a ``match`` with
``cnam_truncated``, scored like "WASHINGTON GEOR" for George Washington. Otherwise a 2-letter stub
still counts as an initial. A 1-letter stub ("DUBOIS-MARTIN J") is an initial, a CNAM shorter than
15 characters has no stub ("SMITH MA" for Mark Smith holds another given name), and a stub that
does not start the given name ("GARCIA-LOPEZ MO" for Maria) is another given name.

============================================  ===============  ==========================================
Evidence                                      State            Reasons
============================================  ===============  ==========================================
surname and given name agree                  match            surname_match, given_name_match|nickname
... but CNAM middle initial contradicts       partial_match    ... + middle_name_mismatch
surname agrees, another given name            partial_match    surname_match, given_name_mismatch
given name agrees, another surname            partial_match    given_name_match|nickname, surname_mismatch
surname agrees, CNAM holds only an initial    ambiguous        surname_match, initial_only
given name agrees, surname only an initial    ambiguous        given_name_match|nickname, initial_only
CNAM holds the surname only                   ambiguous        surname_match, surname_only
CNAM holds the given name only                ambiguous        given_name_match|nickname, given_name_only
both parts only initials ("J S")              ambiguous        initial_only
supplied name is a single word that appears   ambiguous        supplied_name_incomplete
initial agrees, another surname               mismatch         surname_mismatch, initial_only
supplied single word does not appear          mismatch         supplied_name_incomplete, no_name_overlap
nothing agrees                                mismatch         surname_mismatch, given_name_mismatch
============================================  ===============  ==========================================

Hard cases. The male and the female form of one given name (Paul/Paula, Julian/Juliana, Louis/Louise, by
gender-guesser's name table) are two people, neither a typo nor a nickname, though the ``nicknames`` package relates
some of them (Louis/Louise); a nickname that is more than two letters shorter stays one (Lou, Alex for Alexandra). A
word that begins another and is two letters longer (GARCIA/GARCIANO) is another name unless the CNAM was cut. A
romanised given name written as one word on one side and two on the other (JIANGUO, JIAN GUO) is the same name: the
CNAM is read again with two neighbouring words joined where the join is a whole supplied part. The same name with
different generational suffixes on both sides (JR/SR, II/III) is father and son: at most ``partial_match`` with
``generation_mismatch``; a suffix on one side only says nothing.

Issue 33 kinds. Nicknames include the Spanish and Portuguese diminutives of ``diminutives.py`` (Memo/Guillermo,
Chema/José María), and a cut-off last word of 3+ letters that begins a name the supplied given name is a nickname of
(or that is a nickname of it) is that name cut: "FITZPATRICK JAM" for Jim (``nickname`` and ``cnam_truncated``); cut
to two letters ("CHRISTIANSEN RO" for Bob) it is an initial. A particle alone is never the surname ("DEL CASTILLO PE"
is not Juan del Rio), and a run of particles alone is no double surname. An ABD name (ABD + a name of God) written
apart is joined and every ABD name spelled one way (``_abd_key``), on both sides. A whole middle name written after the
given name that contradicts every supplied middle name (``_middle_name_conflicts``) is ``partial_match`` with
``middle_name_mismatch``, as a contradicting initial is. A person compared with a CNAM that ends in a store number
("DENNYS 3321") is a ``mismatch`` with ``store_number`` unless both names agree with no typo; a two-word reading that
found the surname is swapped only to reach a ``match``. For businesses, a trailing store number the supplied name lacks
is set aside, and the CNAM words left that begin the supplied name are a ``match`` ("STARBUCKS 1123"); FT, MT, PT and
ST abbreviate Fort, Mount, Point or Port and Saint; and a CNAM starting with one of them whose other words include a
business word (``_BUSINESS_WORDS``; a cut-off start of one counts) is a name, not a rate centre ("FT MYERS DENTAL").

``cnam_truncated`` and ``typo_tolerated`` are added when a truncated prefix or a typo carried
the evidence. A nickname, truncation or typo lowers the score a little but not the state. A
two-word supplied name is also tried reversed ("Smith Bob"), and that reading is kept only when it
reaches a better state.

Businesses. Names are reduced to a key: "&" and "AND" and "THE" dropped, then trailing legal
forms removed repeatedly using cleanco's term list (INC, LLC, CORP, CORPORATION, CO, LTD, ...).
Equal keys (also ignoring spaces) are a ``match``; a 15-character CNAM that is a prefix of the
supplied name, or whose last word is a cut-off legal form ("MCDONALDS CORPO"), is a ``match`` with
``cnam_truncated``; a rapidfuzz similarity >= 80 is a ``partial_match`` (``business_name_similar``),
as is a key whose words are all inside the other (``business_name_subset``); the rest is a
``mismatch``. cleanco's own ``basename`` scans its whole term list on every call (about 40 µs);
this module indexes the same terms in a set instead. Letters joined by an unspaced "&" are one word (AT&T, PG&E).

Business abbreviations. Short of a match, the CNAM is compared again with each word that abbreviates a supplied word
(or is abbreviated by one) spelled as the supplied name spells it: MFG/Manufacturing, SVCS/Services, INTL, MGMT, ASSN,
DEPT, BROS, ASSOC, CTR, HOSP, UNIV, DIST, ENGR, CONSTR, TECH, SYS. The table is reporters-db's list of the common
words in case names (the Bluebook's table T6), less the short forms that are words of their own (BUS, PUB, COAL),
plus carrier short forms T6 lacks (SVCS, MGT, PLBG, HTG, RLTY, ...; ``_CARRIER_ABBREVIATIONS_TEXT``). No registry
package carries business-word abbreviations as such: cleanco has legal forms only, usaddress and usaddress-scourgify
the USPS Publication 28 street, unit and directional words, probablepeople a trained model. Equal names then are a
``match`` (score 92) with ``business_abbreviation``; a near or subset match keeps that reason. An acronym is one word
that is the initials of two to six neighbouring words on the other side, the rest of both names being the same ("GE
CO" for General Electric Company, "SJ PLUMBING" for Smith Johnson Plumbing, supplied "IBM" for "INTL BUS MACH"): a
``match`` (score 90) with ``business_abbreviation``. An acronym that leaves words over proves nothing ("GE" for
Global Energy Partners stays a mismatch).

Professional suffix. A CNAM ending in a credential (nameparser's post-nominal acronyms: CPA, DDS, DMD, DVM, MD, DO,
OD, PHD, RN, ...; ESQ; ATTY) is read as a person's name (at most three words) with a suffix, for a business subject:
the whole name in the business name, every other word the credential's trade (``_TRADES_TEXT``: CPA accounting/tax,
DDS dental/orthodontics, ...) or a practice word (associates, office, group, law office of ...), is a ``match``
("Susan Park Accounting" for PARK SUSAN CPA); the whole name beside another trade is a ``partial_match`` ("Susan
Park Realty"); part of the name (the surname) with trade or practice words only is a ``partial_match`` ("Park &
Associates", "Kim Medical Group" for KIM MD); the trade without the name is ``ambiguous`` ("Bright Smile Dental" for
LEE JAMES DDS); all with ``professional_name``. Anything else stays as the business comparison had it. MD is read as
a credential here only because ``read_caller_id`` already read the CNAM as a name (checks (2) and (6)).

Caller type. The phone belongs to a business when the provider says ``caller_type`` BUSINESS or
the CNAM carries a legal form (INC, LLC, CORP, ...). For a person that is expected of a work phone,
so a would-be ``mismatch`` becomes ``ambiguous`` (score 40) with ``caller_type_business``; any other
result keeps its state and gains the reason. Symmetrically, for a business subject a provider
``caller_type`` CONSUMER (an owner's own phone) turns a mismatch into ``ambiguous`` with
``caller_type_consumer``.

Scores are similarity evidence, not probabilities. Each scored state owns one band of
``SCORE_BANDS`` (match 85-100, partial_match 60-84, ambiguous 40-59, mismatch 0-39), so the score
never contradicts the state. Within a band: a person match starts at 100 and loses 5 per
truncated part, 8 per nickname and 10 per typo (floor 85); partial matches score 80 (middle
initial conflict), 70 (household) and 66 (married name), less the same small penalties; ambiguous
scores 55 (initial), 50 (surname only, single word), 45 (given name only) and 40 (initials only,
caller type, unusable name); business near matches map rapidfuzz similarity 80-100 onto 60-84;
mismatches map rapidfuzz ``token_sort_ratio`` 0-100 onto 0-39. A supplied name with no letters or
digits cannot be compared: ``ambiguous``, score 40, ``supplied_name_unusable``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import unicodedata
from functools import lru_cache
from itertools import chain
from pathlib import Path
from typing import NamedTuple

import msgspec
from cleanco import prepare_default_terms
from gender_guesser.detector import Detector
from nameparser.config.suffixes import SUFFIX_ACRONYMS
from nicknames import NickNamer
from rapidfuzz import fuzz
from rapidfuzz.distance import OSA

from processors.phone.diminutives import DIMINUTIVES
from topics.phone import CallerIdState, NameMatchState, SubjectType

__all__ = ["REASONS", "SCORE_BANDS", "CallerId", "NameMatch", "match_name", "read_caller_id"]


class CallerId(msgspec.Struct, frozen=True):
    state: CallerIdState
    name: str | None
    """The CNAM string as received (stripped) when the carrier returned one, else None."""
    error_code: str | None


class NameMatch(msgspec.Struct, frozen=True):
    state: NameMatchState
    score: int | None
    """0..100 inside the state's SCORE_BANDS entry; None exactly when state is unavailable."""
    reasons: list[str]


# The order here is the order reasons are emitted in, so callers and tests see stable lists.
REASONS: dict[str, str] = {
    "caller_id_placeholder": "The carrier returned a generic caller-ID string, not a name; nothing to compare.",
    "caller_id_unavailable": "The carrier returned no caller-ID name; nothing to compare.",
    "caller_id_error": "The caller-ID lookup failed at the provider; nothing to compare.",
    "supplied_name_unusable": "The supplied name has no letters or digits to compare.",
    "supplied_name_incomplete": "The supplied name is a single word, so given name and surname cannot both be checked.",
    "surname_match": "The supplied surname appears in the caller-ID name.",
    "surname_mismatch": "The caller-ID name holds a different surname.",
    "given_name_match": "The supplied given name appears in the caller-ID name.",
    "given_name_mismatch": "The caller-ID name holds a different given name.",
    "nickname": "The given names differ but one is a known nickname of the other (Bob/Robert).",
    "initial_only": "One side gives only an initial for a name part; the initial is consistent.",
    "surname_only": "The caller-ID name holds the surname and nothing else.",
    "given_name_only": "The caller-ID name holds the given name and nothing else.",
    "middle_name_mismatch": "The caller-ID middle name or initial contradicts the supplied middle name.",
    "no_name_overlap": "No word of the supplied name corresponds to a word of the caller-ID name.",
    "business_name_match": "The business names are equal once legal forms, THE, &/AND and word order are ignored.",
    "business_name_similar": "The business names are similar but not equal.",
    "business_name_subset": "Every word of one business name appears in the other.",
    "business_name_mismatch": "The business names are not similar.",
    "cnam_truncated": "The caller-ID name was cut at 15 characters; its cut-off end matched as a prefix.",
    "typo_tolerated": "A name part matched with a small spelling difference.",
    "caller_type_business": "The phone belongs to a business (provider caller type or a legal form in the caller-ID).",
    "caller_type_consumer": "The provider reports a consumer phone for a business subject.",
    "generation_mismatch": "The two names carry different generational suffixes (JR/SR, II/III): father and son.",
    "business_abbreviation": "A word abbreviates the other name's word (MFG) or is an acronym of its words (GE).",
    "professional_name": "A person with a professional suffix (CPA, DDS) whose name or trade the business name holds.",
    "store_number": "The caller-ID is a chain's branch: a name and a store number, which is no part of the name.",
}

SCORE_BANDS: dict[str, tuple[int, int]] = {
    "match": (85, 100),
    "partial_match": (60, 84),
    "ambiguous": (40, 59),
    "mismatch": (0, 39),
}

_REASON_ORDER = {code: index for index, code in enumerate(REASONS)}
_STATE_RANK = {"mismatch": 0, "ambiguous": 1, "partial_match": 2, "match": 3}
_CNAM_MAX_LENGTH = 15

# --------------------------------------------------------------------------- normalisation

_APOSTROPHES = str.maketrans("", "", "'\u2019\u2018\u02bc`\u00b4")
# Letters that NFKD does not decompose into an ASCII base letter.
_UNDECOMPOSABLE = str.maketrans(
    {"ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe", "\u0131": "i"}
)
_WORD = re.compile(r"[a-z0-9]+")
_LETTERS = re.compile(r"[a-z]+")


@lru_cache(maxsize=8192)
def _fold(text: str) -> str:
    """Lower-case ASCII-ish text: accents dropped, apostrophes removed, '&' spelled out."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return bare.translate(_UNDECOMPOSABLE).translate(_APOSTROPHES).replace("&", " and ")


def _words(text: str) -> list[str]:
    return _WORD.findall(_fold(text))


# --------------------------------------------------------------------------- placeholder strings

# What carriers and CNAM databases return instead of a name, folded as `_fold` does ("OUT-OF-AREA"
# and "Out of area" are both "out of area"). Sources: the carrier defaults Android's CarrierConfig
# filters (`filtered_cnap_names_string_array`: WIRELESS CALLER, UNKNOWN NAME); carrier and provider
# support pages (46 Labs: the city and state, or NOT AVAILABLE, when no name is on file; 8x8: TOLL
# FREE CALLER; VBuzzer: WIRELESS CALLER, UNKNOWN, PRIVATE); Caller ID handset manuals (PRIVATE, OUT
# OF AREA, NO NAME); the strings public CRM, PBX and dialer code filters out of CNAM data (TOLL FREE
# CALL, VOIP CALLER, RESTRICTED, BLOCKED CALLER, NUMBER WITHHELD, PAYPHONE, ...); and the listing
# statuses carriers use for unpublished numbers (UNLISTED, NON-PUBLISHED, CONFIDENTIAL). The last
# line holds the handset network's spam labels. Only phrases nobody is named: "WIRELESS WORLD" and
# "TOLL BROTHERS" stay names.
_GENERIC_PHRASES_TEXT = """
    unavailable|not available|name unavailable|unavailable name|name not available|no name available
    information unavailable|info unavailable|caller id unavailable|number unavailable|not found
    name not found|no name|no caller id|no caller i d|unknown|unknown name|unknown caller|unknown number
    name unknown|caller unknown|none|null|n a
    anonymous|anonymous caller|private|private caller|private number|private name|restricted
    restricted caller|restricted number|blocked|blocked caller|blocked number|blocked name|name blocked
    caller id blocked|withheld|number withheld|caller id withheld|unlisted|unlisted number|unlisted name
    non published|nonpublished|non published number|non pub|nonpub|confidential
    wireless|wireless caller|wireless phone|wireless customer|wireless user|wireless number|cellular
    cell phone|cellphone|cell phone caller|cellular caller|cellular phone|mobile|mobile caller
    mobile phone|mobile user|voip|voip caller|voip call|internet caller|internet call|caller|caller id
    incoming call|payphone|pay phone|public phone|coin phone|toll free|tollfree|toll free call
    tollfree call|toll free caller|toll free number|out of area|out of area caller|international
    international caller|intl caller
    spam risk|spam likely|scam likely|potential spam|suspected spam|potential fraud
    """


def _phrases(text: str) -> frozenset[str]:
    return frozenset(entry.strip() for entry in text.replace("\n", "|").split("|") if entry.strip())


_GENERIC_PHRASES = _phrases(_GENERIC_PHRASES_TEXT)
# A generic phrase cut at 15 characters ("CALLER ID BLOCK", "OUT OF AREA CAL"): prefixes of the
# multi-word phrases long enough to be a cut, checked only on a cut CNAM whose last word kept 3+ letters.
_GENERIC_CUTS = frozenset(
    phrase[:size] for phrase in _GENERIC_PHRASES if " " in phrase for size in range(12, len(phrase))
)
# A CNAM that is only a letter beside a phone number ("V4155551234"): at least this many digits.
_PHONE_DIGITS = 7


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STATE_CODES = _word_set(
    "al ak az ar ca co ct de dc fl ga hi id il in ia ks ky la me md ma mi mn ms mo mt ne nv nh nj nm ny "
    "nc nd oh ok or pa ri sc sd tn tx ut vt va wa wv wi wy as gu mp pr vi fm mh pw"
)
# States written in full, as some databases send them alone ("CALIFORNIA") or after the city
# ("AUSTIN TEXAS"). GEORGIA, VIRGINIA, WASHINGTON and MONTANA are left out: they are also given names
# or surnames ("SMITH VIRGINIA", "GEORGE WASHINGTON").
_STATE_NAMES_TEXT = """
    alabama al|alaska ak|arizona az|arkansas ar|california ca|colorado co|connecticut ct|delaware de
    florida fl|hawaii hi|idaho id|illinois il|indiana in|iowa ia|kansas ks|kentucky ky|louisiana la
    maine me|maryland md|massachusetts ma|michigan mi|minnesota mn|mississippi ms|missouri mo
    nebraska ne|nevada nv|new hampshire nh|new jersey nj|new mexico nm|new york ny|north carolina nc
    north dakota nd|ohio oh|oklahoma ok|oregon or|pennsylvania pa|rhode island ri|south carolina sc
    south dakota sd|tennessee tn|texas tx|utah ut|vermont vt|west virginia wv|wisconsin wi|wyoming wy
    district of columbia dc|puerto rico pr|guam gu|virgin islands vi
    """
_STATE_NAMES: dict[tuple[str, ...], str] = {
    tuple(place.split()): code for place, _, code in (entry.rpartition(" ") for entry in _phrases(_STATE_NAMES_TEXT))
}
# State codes that are also business designations (company, professional association, doctor).
_DESIGNATION_CODES = frozenset({"co", "pa", "md"})
# Codes that also begin names: the designations and the surname particles DE and LA ("DE LEON").
_NAME_FIRST_CODES = _DESIGNATION_CODES | {"de", "la"}
# First words that make a multi-word place name ("SAN JOSE", "FORT WORTH", "LAKE CHARLES").
_PLACE_WORDS = _word_set(
    "san santa santo los las la el new fort ft port pt saint st sainte ste mount mt lake palm east west north "
    "south grand glen cape n s e w"
)
# Place words as the LERG and the carriers abbreviate them, which begin no name: FORT, MOUNT, PORT or POINT ("FT
# COLLINS CO", "MT AIRY MD", "PT PLEASANT NJ"). N, S, E and W (USPS Publication 28's directionals) may be a person's
# initial ("S MARTINEZ"), and ST begins surnames ("ST JOHN MARY"), so they count only beside more evidence.
_PLACE_ABBREVIATIONS = _word_set("ft mt pt")
# Abbreviated first words of places that also begin businesses' names (FT MYERS DENTAL, ST LUKES CLINIC).
_ABBREVIATED_STARTS = _PLACE_ABBREVIATIONS | {"st"}
_DIRECTIONS = _word_set("n s e w")
# Words after which a given name is part of a place name: saints ("PORT ST LUCIE", "E ST LOUIS") and SAN/SANTA.
_SAINT_WORDS = _word_set("st saint ste sainte san santa santo")
# Words (and their LERG abbreviations) that end a multi-word place name ("CEDAR RAPIDS", "WALNUT
# CREEK", "STERLING HTS"). Words that are also common surnames (HILL, MILLS, WELLS) are left out.
_CITY_WORDS = _word_set(
    "beach bch falls fls city springs spgs park pk valley vly heights hts hgts hills hls rapids grove creek "
    "crk harbor harbour hbr haven island isl bay junction jct center ctr village vlg point pt station river "
    "ridge bluffs view vista gardens shores lakes oaks pines cove ranch rancho plains meadows"
)
# Common rate centres, chiefly cities whose names are also given names or sit in CO/PA/MD/AL,
# where the general rule cannot decide on its own.
_RATE_CENTRES_TEXT = """
    NEW YORK NY|BROOKLYN NY|BRONX NY|QUEENS NY|STATEN ISLAND NY|BUFFALO NY|ROCHESTER NY|ALBANY NY|SYRACUSE NY
    LOS ANGELES CA|SAN FRANCISCO CA|SAN DIEGO CA|SAN JOSE CA|OAKLAND CA|SACRAMENTO CA|FRESNO CA|LONG BEACH CA
    CHICAGO IL|SPRINGFIELD IL|AURORA IL|PEORIA IL|HOUSTON TX|DALLAS TX|AUSTIN TX|SAN ANTONIO TX|FORT WORTH TX
    EL PASO TX|ARLINGTON TX|IRVING TX|TYLER TX|VICTORIA TX|AMARILLO TX|LUBBOCK TX|PLANO TX|LAREDO TX
    PHOENIX AZ|TUCSON AZ|MESA AZ|DOUGLAS AZ|PHILADELPHIA PA|PITTSBURGH PA|ALLENTOWN PA|ERIE PA|READING PA
    SCRANTON PA|LANCASTER PA|HARRISBURG PA|BETHLEHEM PA|CHESTER PA|YORK PA|STATE COLLEGE PA|WILKES BARRE PA
    DENVER CO|AURORA CO|BOULDER CO|PUEBLO CO|GREELEY CO|LAKEWOOD CO|LITTLETON CO|GOLDEN CO|LOVELAND CO
    COLORADO SPGS CO|COLORADO SPRINGS CO|FORT COLLINS CO|GRAND JUNCTION CO|BALTIMORE MD|ANNAPOLIS MD
    ROCKVILLE MD|FREDERICK MD|BETHESDA MD|SILVER SPRING MD|GAITHERSBURG MD|COLUMBIA MD|LAUREL MD|BOWIE MD
    TOWSON MD|HAGERSTOWN MD|SALISBURY MD|BIRMINGHAM AL|MONTGOMERY AL|MOBILE AL|HUNTSVILLE AL|TUSCALOOSA AL
    DOTHAN AL|AUBURN AL|SELMA AL|FLORENCE AL|DECATUR AL|GADSDEN AL|JACKSON MS|JACKSON TN|MADISON WI
    LINCOLN NE|OMAHA NE|CHARLOTTE NC|RALEIGH NC|DURHAM NC|GREENSBORO NC|SAVANNAH GA|ATLANTA GA|AUGUSTA GA
    AUGUSTA ME|HELENA MT|ELIZABETH NJ|NEWARK NJ|TRENTON NJ|CAMDEN NJ|JERSEY CITY NJ|FLORENCE SC|MARION OH
    MARION IN|COLUMBUS OH|COLUMBUS GA|CLEVELAND OH|CINCINNATI OH|DAYTON OH|TOLEDO OH|AKRON OH|LAFAYETTE LA
    LAFAYETTE IN|BATON ROUGE LA|NEW ORLEANS LA|SHREVEPORT LA|EUGENE OR|PORTLAND OR|SALEM OR|PORTLAND ME
    FRANKLIN TN|NASHVILLE TN|MEMPHIS TN|KNOXVILLE TN|CHATTANOOGA TN|LAWRENCE KS|WICHITA KS|TOPEKA KS
    JEFFERSON CITY MO|KANSAS CITY MO|SAINT LOUIS MO|ST LOUIS MO|SPRINGFIELD MO|BEVERLY MA|BOSTON MA
    WORCESTER MA|SPRINGFIELD MA|CAMBRIDGE MA|LAUREL MS|SEATTLE WA|SPOKANE WA|TACOMA WA|OLYMPIA WA
    MIAMI FL|ORLANDO FL|TAMPA FL|JACKSONVILLE FL|TALLAHASSEE FL|DETROIT MI|LANSING MI|GRAND RAPIDS MI
    MINNEAPOLIS MN|SAINT PAUL MN|ST PAUL MN|MILWAUKEE WI|INDIANAPOLIS IN|LOUISVILLE KY|LEXINGTON KY
    LAS VEGAS NV|RENO NV|HENDERSON NV|ALBUQUERQUE NM|SANTA FE NM|SALT LAKE CITY UT|BOISE ID|HONOLULU HI
    ANCHORAGE AK|JUNEAU AK|LITTLE ROCK AR|OKLAHOMA CITY OK|TULSA OK|DES MOINES IA|SIOUX FALLS SD
    PROVIDENCE RI|HARTFORD CT|NEW HAVEN CT|WILMINGTON DE|DOVER DE|RICHMOND VA|NORFOLK VA|VIRGINIA BEACH VA
    CHARLESTON WV|CHARLESTON SC|COLUMBIA SC|WASHINGTON DC|SAN JUAN PR|CHARLOTTE AMALIE VI|HAGATNA GU
    NEWPORT NEWS VA|CORAL GABLES FL|SIERRA MADRE CA|AGUAS BUENAS PR
    """


def _rate_centres(text: str) -> frozenset[tuple[str, str]]:
    """("austin", "tx") pairs from "AUSTIN TX|DALLAS TX|..." lines."""
    entries = (entry.strip().lower() for entry in text.replace("\n", "|").split("|"))
    return frozenset((place, state) for place, _, state in (entry.rpartition(" ") for entry in entries if entry))


_RATE_CENTRES = _rate_centres(_RATE_CENTRES_TEXT)
_RATE_CENTRE_CITIES = frozenset(place for place, _ in _RATE_CENTRES)

_NICKNAMER = NickNamer()
_GIVEN_NAMES = frozenset(chain(_NICKNAMER.nickname_lookup, _NICKNAMER.canonical_lookup))
# Two-letter starts of given names: a state code that is one may be a given name cut at 15 ("MA").
_GIVEN_NAME_STARTS = frozenset(name[:2] for name in _GIVEN_NAMES if len(name) > 2)


def _is_rate_centre(place: tuple[str, ...], state: str, *, spelled: bool, cut: bool) -> bool:
    """`CITY ST` placeholder rule; see the module docstring for the order of the checks.

    `spelled` is true when the state was written in full ("AUSTIN TEXAS"); the code checks (2), (3)
    and (5) are about two-letter codes only.
    """
    text = " ".join(place)
    if text in _GENERIC_PHRASES or (text, state) in _RATE_CENTRES:
        return True
    if len(place) >= 2 and place[0] in _ABBREVIATED_STARTS and _has_business_word(place[1:], cut=False):
        return False  # "FT MYERS DENTAL FL", "ST JOHNS DELI NY": a business named after its town or saint
    if len(place) >= 2 and place[0] in _PLACE_ABBREVIATIONS:  # before (2): "FT COLLINS CO", "MT AIRY MD"
        return True
    if not spelled and (state in _DESIGNATION_CODES or state in _GIVEN_NAMES):
        return False
    if len(place) >= 2 and place[0] in _PLACE_WORDS:
        return True
    if not spelled and cut and len(place) >= 2 and state in _GIVEN_NAME_STARTS and _CITY_WORDS.isdisjoint(place):
        return False  # "GARCIA-LOPEZ MA": a double surname, the given name cut to two letters
    return not any(word in _GIVEN_NAMES for word in place)


def _is_city_state(words: tuple[str, ...], cut: bool) -> bool:
    """A rate centre `CITY ST`, `CITY STATE` or `ST CITY`, or a state name alone ("CALIFORNIA")."""
    if words in _STATE_NAMES:
        return True
    for size in (3, 2, 1):
        code = _STATE_NAMES.get(words[-size:])
        if code is not None and len(words) > size:
            return _is_rate_centre(words[:-size], code, spelled=True, cut=cut)
    if len(words) >= 2 and words[-1] in _STATE_CODES:
        return _is_rate_centre(words[:-1], words[-1], spelled=False, cut=cut)
    return _is_state_first(words)


def _is_state_first(words: tuple[str, ...]) -> bool:
    """`ST CITY` ("TX AUSTIN", "CA SAN JOSE"): only a listed rate centre or a place-word city.

    Names often start with a word that is also a code ("MA WEI", "DE LEON JUAN", "AL SMITH"), so the
    general rule of `CITY ST` is not applied, and DE, LA, designations and given names never start one.
    """
    state, place = words[0], words[1:]
    if not place or state not in _STATE_CODES or state in _NAME_FIRST_CODES or state in _GIVEN_NAMES:
        return False
    return (" ".join(place), state) in _RATE_CENTRES or (len(place) >= 2 and place[0] in _PLACE_WORDS)


@lru_cache(maxsize=4096)
def _is_placeholder(name: str) -> bool:
    folded = _fold(name)
    # Digits never belong to a name: "CALLER 5551234", "CALLER5551234" and a bare number are generic.
    words = tuple(_LETTERS.findall(folded))
    if not words:
        return True
    # A lone letter beside a phone number ("V4155551234", "V 415 555 1234") is no name either.
    if len(words) == 1 and len(words[0]) == 1 and sum(ch.isdigit() for ch in folded) >= _PHONE_DIGITS:
        return True
    text = " ".join(words)
    cut = _is_cut(name)
    if text in _GENERIC_PHRASES or _is_city_state(words, cut):
        return True
    if not cut or len(words) < 2:
        return False
    # A generic phrase cut at 15 characters: "CALLER ID BLOCK", "NAME NOT AVAILA".
    if text in _GENERIC_CUTS and len(words[-1]) >= 3:
        return True
    # A long rate centre cut at 15 characters keeps one letter of its state code ("SAN FRANCISCO C", "FT
    # LAUDERDALE F", "ST PETERSBURG F") or none ("S SAN FRANCISCO").
    if len(words[-1]) == 1 and any(code[0] == words[-1] for code in _STATE_CODES):
        place = words[:-1]
        if any((" ".join(place), code) in _RATE_CENTRES for code in _STATE_CODES if code[0] == words[-1]):
            return True
        if len(place) >= 2 and _is_cut_place(place):
            return True
    return _is_cut_place(words) and (words[0] in _PLACE_ABBREVIATIONS or words[1] in _PLACE_WORDS)


def _is_cut_place(words: tuple[str, ...]) -> bool:
    """A place name whose state was cut off: it starts with a place word and names no person.

    A given name among its words makes it a name ("ST CLAIR MARY A"), unless a saint's or SAN/SANTA stands before it
    ("PORT ST LUCIE F"). A single-letter direction counts only before another place word ("S SAN FRANCISCO"), as a
    person's initial stands there too ("S MARTINEZ-LOPE").
    """
    if len(words) < 2 or words[0] not in _PLACE_WORDS or _has_business_word(words[1:], cut=True):
        return False
    if words[0] in _DIRECTIONS:
        if _is_listed_city(words[1:]):  # "N LITTLE ROCK A"
            return True
        if words[1] not in _PLACE_WORDS:
            return False
    return not any(
        word in _GIVEN_NAMES and words[index - 1] not in _SAINT_WORDS for index, word in enumerate(words) if index
    )


def _has_business_word(words: tuple[str, ...], *, cut: bool) -> bool:
    """Whether a word names a trade or a kind of business (DENTAL, CLINIC, HOSPITAL, DELI, INC), or, with `cut`, the
    last word is the cut-off start of one (HOSPIT), so the words are a business's name, not a place's."""
    if not _BUSINESS_WORDS.isdisjoint(words):
        return True
    return cut and words[-1] in _BUSINESS_WORD_STARTS


def _is_listed_city(place: tuple[str, ...]) -> bool:
    return " ".join(place) in _RATE_CENTRE_CITIES


def _is_cut(name: str) -> bool:
    """Whether a CNAM string has the carrier's full length, so its end may be cut off."""
    return len(" ".join(name.split())) == _CNAM_MAX_LENGTH


def read_caller_id(caller_name: str | None, error_code: str | None = None) -> CallerId:
    """Classify the provider's caller-name answer as available, placeholder, unavailable or error.

    A blank error code counts as none; any other error code is kept as a stripped string.
    """
    if error_code is not None and str(error_code).strip():
        return CallerId(state="error", name=None, error_code=str(error_code).strip())
    name = caller_name.strip() if caller_name else ""
    if not name:
        return CallerId(state="unavailable", name=None, error_code=None)
    if _is_placeholder(name):
        return CallerId(state="placeholder", name=name, error_code=None)
    return CallerId(state="available", name=name, error_code=None)


# --------------------------------------------------------------------------- shared scoring helpers


class _Verdict(NamedTuple):
    state: NameMatchState
    score: int
    reasons: tuple[str, ...]

    @property
    def rank(self) -> tuple[int, int]:
        return _STATE_RANK[self.state], self.score

    def or_better_state(self, alternative: _Verdict) -> _Verdict:
        """`alternative` where it reaches a better state; another reading of the names must win on state, not on
        score alone."""
        return alternative if _STATE_RANK[alternative.state] > _STATE_RANK[self.state] else self


def _verdict(state: NameMatchState, score: float, *reasons: str) -> _Verdict:
    low, high = SCORE_BANDS[state]
    return _Verdict(state, int(min(high, max(low, score))), tuple(dict.fromkeys(reasons)))


def _in_band(state: str, similarity: float) -> float:
    """Place a 0..100 similarity inside the state's band, so better evidence ranks higher."""
    low, high = SCORE_BANDS[state]
    return low + (high - low) * similarity / 100


def _similar(a: str, b: str) -> bool:
    """A typo-level difference between two words of three or more letters."""
    if len(a) < 3 or len(b) < 3 or abs(len(a) - len(b)) > 2:
        return False
    shorter, longer = sorted((a, b), key=len)
    if len(longer) - len(shorter) == 2 and longer.startswith(shorter):
        # GARCIA and GARCIANO, MARTIN and MARTINEZ: another name that begins with this one, not a slip. Only a
        # CNAM cut at 15 characters explains a missing tail (`_relation`).
        return False
    if fuzz.ratio(a, b) >= 80:
        return True
    # ratio counts a swap of neighbours as two edits; treat "JHON"/"JOHN" as one slip.
    return len(a) == len(b) >= 4 and sorted(a) == sorted(b) and OSA.distance(a, b) == 1


# --------------------------------------------------------------------------- persons

_HONORIFICS = frozenset({"mr", "mrs", "ms", "miss", "mx", "dr", "prof", "rev"})
_GENERATIONAL = frozenset({"jr", "sr", "ii", "iii", "iv"})
# Surname particles: Romance (de, del, de la, da, dos, di, du), Dutch and German (van, van der, von), Arabic (al, el,
# bin, ibn, bint) and ST. A particle joins the surname after it; alone it names no family ("DEL CASTILLO" is not
# "del Rio"), so it never counts as the surname by itself.
_PARTICLES = frozenset(
    {"de", "del", "della", "der", "den", "di", "da", "do", "dos", "das", "du", "la", "le", "van", "von", "st"}
    | {"al", "el", "bin", "ibn", "bint"}
)
# Legal forms that mark a caller-ID as a business; deliberately short and US-centred.
_LEGAL_MARKERS = frozenset({"inc", "incorporated", "llc", "pllc", "llp", "corp", "corporation", "ltd", "co", "company"})

_NONE, _INITIAL, _TYPO, _CUT_NICKNAME, _NICKNAME, _TRUNCATED, _EXACT = range(7)
_PENALTY = {_EXACT: 0, _TRUNCATED: 5, _NICKNAME: 8, _CUT_NICKNAME: 13, _TYPO: 10}
_MODIFIER_REASON = {_TRUNCATED: "cnam_truncated", _CUT_NICKNAME: "cnam_truncated", _TYPO: "typo_tolerated"}
_NICKNAME_RELATIONS = (_NICKNAME, _CUT_NICKNAME)
# Letters a cut-off given name must keep to count as truncated once the surname is matched in full.
_GIVEN_STUB_MIN = 2


class _Part(NamedTuple):
    """One supplied name part: `forms` holds the whole part and its hyphen/space pieces."""

    forms: tuple[str, ...]

    @property
    def first(self) -> str:
        return self.forms[0]


class _Person(NamedTuple):
    given: _Part | None
    surname: _Part | None
    middles: tuple[_Part, ...]
    swappable: bool
    text: str
    generation: str | None = None
    """The generational suffix written after the name (jr, sr, ii, iii, iv), if any."""


class _Cnam(NamedTuple):
    tokens: tuple[str, ...]
    truncated: bool
    business_like: bool
    text: str
    generation: str | None = None
    store_number: bool = False
    """The CNAM ends in a store number: a chain's branch, whose words are the chain's name."""


def _part(pieces: list[str]) -> _Part:
    whole = "".join(pieces)
    return _Part(tuple(dict.fromkeys([whole, *pieces])))


@lru_cache(maxsize=4096)
def _parse_person(supplied: str) -> _Person | None:
    """Split a supplied person name into given name, middle names and surname."""
    folded = _fold(supplied)
    has_comma = "," in folded
    if has_comma:  # "Smith, John": the caller wrote the surname first.
        head, _, tail = folded.partition(",")
        folded = f"{tail} {head}"
    words = [pieces for pieces in (_WORD.findall(raw) for raw in folded.split()) if pieces]
    while len(words) > 1 and len(words[0]) == 1 and words[0][0] in _HONORIFICS:
        words.pop(0)
    generation = None
    while len(words) > 1 and "".join(words[-1]) in _GENERATIONAL:
        generation = "".join(words.pop())
    if not words:
        return None
    text = " ".join(chain.from_iterable(words))
    words = _join_arabic_names(words, cut=False)
    if len(words) == 1:
        return _Person(None, _part(words[0]), (), False, text, generation)
    # Particles belong to the surname: "Juan de la Cruz" has surname "de la cruz" / "delacruz".
    while len(words) > 2 and "".join(words[-2]) in _PARTICLES:
        words[-2:] = [words[-2] + words[-1]]
    given, surname = _part(words[0]), _part(words[-1])
    middles = tuple(_part(word) for word in words[1:-1])
    if middles:
        # "Mary Jane Smith" may be on file as "SMITH MARYJANE".
        given = _Part((*given.forms, given.first + middles[0].first))
    swappable = len(words) == 2 and not has_comma
    return _Person(given, surname, middles, swappable, text, generation)


@lru_cache(maxsize=4096)
def _parse_cnam(name: str) -> _Cnam:
    every_word = _words(name)
    words = [word for word in every_word if not word.isdigit() and word != "and"]
    business_like = any(word in _LEGAL_MARKERS for word in words)
    tokens = tuple(word for word in words if word not in _LEGAL_MARKERS and word not in _GENERATIONAL)
    generations = [word for word in words if word in _GENERATIONAL]
    truncated = _is_cut(name)
    generation = generations[-1] if generations and len(tokens) > 1 else None
    if any(token.startswith("abd") for token in tokens):
        tokens = tuple(chain.from_iterable(_join_arabic_names([[token] for token in tokens], cut=truncated)))
    return _Cnam(
        tokens or tuple(words), truncated, business_like, " ".join(words), generation, _has_store_number(every_word)
    )


def _has_store_number(words: list[str]) -> bool:
    """A chain's branch listing: a name followed by a store number of 2+ digits ("WALGREENS 04521", "DENNYS 3321")."""
    number = words[-1] if words else ""
    return number.isdigit() and len(number) >= _STORE_NUMBER_DIGITS and any(word.isalpha() for word in words[:-1])


_STORE_NUMBER_DIGITS = 2

# Arabic theophoric names, "servant of" (ABD) one of the names of God, written joined or apart: ABDULRAHMAN, ABD AL
# RAHMAN, ABDEL RAHMAN, ABDUR RAHMAN, ABDURRAHMAN are one name. The first word of such a name written apart...
_ABD_HEADS = _word_set("abd abdu abdul abdel abdal abdil abdol abdur abdus abdun abdush abder abdes abdi abdou")
# ... and the article between, when it stands alone (ABD AL RAHMAN, ABD EL AZIZ).
_ARABIC_ARTICLES = _word_set("al el ul ol")
# The names that follow ABD: the 99 names of God (as in the hadith list of al-Tirmidhi) in their common English
# spellings, with ALLAH and the two non-divine names that take the same form (MUTTALIB, NABI).
_DIVINE_NAMES = _word_set(
    "allah llah lah rahman rehman rahim raheem malik malek quddus salam salaam mumin muhaymin aziz azeez jabbar "
    "mutakabbir khaliq khaleq bari musawwir ghaffar ghafar ghafur ghafoor qahhar wahhab wahab razzaq razak razaq "
    "fattah alim aleem qabid basit baset khafid rafi muizz sami samee basir hakam adl latif lateef khabir halim "
    "haleem azim azeem shakur shakoor ali kabir hafiz hafeez muqit hasib jalil jaleel karim kareem raqib mujib "
    "mujeeb wasi hakim hakeem wadud wadood majid majeed shahid haqq haq wakil qawi matin mateen wali hamid hameed "
    "muhsi mubdi muid muhyi hayy qayyum qayoom wajid wahid waheed ahad samad qadir qader kader kadir muqtadir awwal "
    "akhir zahir batin barr tawwab afuw rauf raouf nur noor hadi badi baqi warith rashid rasheed sabur sattar "
    "ghani mannan nasser nasir muttalib nabi"
)
# Where ABD meets the name: a vowel and L (ABDUL, ABDEL, ABDAL), or a vowel and a doubled letter (ABDURRAHMAN,
# ABDUSSALAM, ABDUSH SHAKUR), the Arabic article assimilated to the name's first letter.
_ABD_JOIN = re.compile(r"abd(?:[aeiou](sh|[rsntdzl])(?=\1)|[aeiou]l)?")


def _abd_key(word: str) -> str:
    """One spelling for an ABD name: ABD, then the name without the article or a leading vowel (ABDULRAHMAN,
    ABDELRAHMAN, ABDURRAHMAN and ABDIRAHMAN are all ABDRAHMAN; ABDULLAH and ABDALLAH are ABDLAH)."""
    join = _ABD_JOIN.match(word)
    if join is None:
        return word
    rest = word[join.end() :].lstrip("aeiou")
    return "abd" + rest if len(rest) >= _ABD_NAME_MIN else word


_ABD_NAME_MIN = 2


def _join_arabic_names(words: list[list[str]], *, cut: bool) -> list[list[str]]:
    """`words` (each a list of its hyphen pieces) with an ABD name written apart joined into one word and every ABD
    name spelled as `_abd_key` spells it. A head joins the next word when an article stands between (ABD AL RAHMAN)
    or the next word is a name of God (ABDEL RAHMAN; in a CNAM cut at 15, the cut-off start of one: ABDUL RAHM);
    ABDUL SMITH stays two words."""
    if not any(word[0].startswith("abd") for word in words):
        return words
    flat = ["".join(word) for word in words]
    joined: list[list[str]] = []
    index = 0
    while index < len(words):
        end = index + 1
        if flat[index] in _ABD_HEADS and end < len(words):
            after = flat[end]
            if after in _ARABIC_ARTICLES and end + 1 < len(words):
                end += 2
            elif after in _DIVINE_NAMES or (
                cut
                and end == len(words) - 1
                and len(after) >= 3
                and any(name.startswith(after) for name in _DIVINE_NAMES)
            ):
                end += 1
        text = "".join(flat[index:end])
        joined.append([_abd_key(text)] if text.startswith("abd") else words[index])
        index = end
    return joined


def _nickname_of(token: str, forms: tuple[str, ...]) -> bool:
    related = _NICKNAMES.get(token)
    return related is not None and any(form in related for form in forms)


def _cut_full_form(stub: str, forms: tuple[str, ...]) -> bool:
    """Whether a cut-off CNAM word begins a name that one of `forms` is a nickname of, or a nickname of it: the
    CNAM holds the full form (or another nickname) of the supplied nickname, cut at 15 characters."""
    return any(name.startswith(stub) for form in forms for name in _NICKNAMES.get(form, ()))


# A cut-off word must keep this many letters to be read as a nickname's full form (JAM for JAMES).
_CUT_NICKNAME_MIN = 3


def _relation(token: str, part: _Part, *, given: bool, truncated: bool) -> int:
    """How strongly one CNAM word supports one supplied name part."""
    forms = part.forms
    if token in _PARTICLES and token != part.first:
        return _NONE  # "del" of "del Rio" is no surname by itself
    if token in forms:
        return _EXACT
    if truncated and any(form.startswith(token) for form in forms):
        if len(token) >= 3:
            return _TRUNCATED
        # A cut-off two-letter stub says no more than an initial does, unless the surname is
        # matched in full (`_person_outcome`).
        return _INITIAL
    if given and truncated and len(token) == _GIVEN_STUB_MIN and _cut_full_form(token, forms):
        return _INITIAL  # "CHRISTIANSEN RO" for Bob: RO may begin ROBERT, as an initial may
    if given and _nickname_of(token, forms):
        if any(_gendered_pair(token, form) for form in forms):
            return _NONE  # Louis and Louise: the nicknames package relates them, but they are two people
        return _NICKNAME
    if given and truncated and len(token) >= _CUT_NICKNAME_MIN and _cut_full_form(token, forms):
        return _CUT_NICKNAME  # "FITZPATRICK JAM" for Jim: JAMES, the full form of Jim, cut at 15 characters
    if len(token) == 1 or len(part.first) == 1:
        return _INITIAL if token[0] == part.first[0] else _NONE
    if any(_similar(token, form) for form in forms):
        if any(_other_gender(token, form) for form in forms):
            return _NONE  # Gabriel and Gabriela are two people, not a slip of the keyboard (in either order)
        return _TYPO
    return _NONE


_MALE, _FEMALE = frozenset({"male", "mostly_male"}), frozenset({"female", "mostly_female"})
_GENDERS = Detector(case_sensitive=False)
"""gender-guesser's table of about 40,000 given names and their use by gender, from Jörg Michael's name dictionary."""


def _other_gender(a: str, b: str) -> bool:
    """Whether two given names are the male and the female form of one name (Paul and Paula, Julian and Juliana)."""
    genders = {_GENDERS.get_gender(a), _GENDERS.get_gender(b)}
    return bool(genders & _MALE) and bool(genders & _FEMALE)


def _gendered_pair(a: str, b: str) -> bool:
    """The male and the female form of one name (Louis/Louise, Carlo/Carla): of the other gender, at most two letters
    longer, and the same but for the last letter of the shorter one. Lou and Louise, Alex and Alexandra, Sam and
    Samantha are nicknames, not such pairs."""
    shorter, longer = sorted((a, b), key=len)
    if len(shorter) < _GENDERED_MIN or len(longer) - len(shorter) > _GENDERED_EXTRA:
        return False
    return longer.startswith(shorter[:-1]) and _other_gender(a, b)


# A gendered form adds at most this many letters (Victor, Victoria) to a name of at least this many (Eric, Erica).
_GENDERED_EXTRA, _GENDERED_MIN = 2, 3


def _surname_relation(token: str, person: _Person, truncated: bool) -> int:
    assert person.surname is not None
    best = _relation(token, person.surname, given=False, truncated=truncated)
    if best < _TRUNCATED:
        # A middle word may be the surname on file (double surnames, maiden names); only a
        # clean hit counts, so a middle initial never poses as a surname.
        for middle in person.middles:
            relation = _relation(token, middle, given=False, truncated=truncated)
            if relation >= _TRUNCATED and len(middle.first) > 1:
                best = max(best, relation)
    return best


def _cut_index(cnam: _Cnam) -> int:
    """Index of the CNAM word that may be cut off (the last word of a 15-character CNAM), else -1."""
    return len(cnam.tokens) - 1 if cnam.truncated else -1


def _compound_surname(person: _Person) -> tuple[tuple[str, ...], bool]:
    """The words of the supplied double surname in order, and whether they must reach the CNAM cut.

    A hyphenated (or particle) surname always counts: "Garcia-Lopez", "de la Cruz". A last middle
    name followed by the surname ("Ana Sofia Rodriguez Hernandez") counts only up to the cut-off end
    of a 15-character CNAM, since a middle word is as often a second given name ("John Adam Smith"
    on file as "ADAM SMITH").
    """
    assert person.surname is not None
    if len(person.surname.forms) > 1:
        return person.surname.forms[1:], False
    if person.middles and len(person.middles[-1].first) > 1:
        middle = person.middles[-1]
        return (*(middle.forms[1:] or middle.forms), person.surname.first), True
    return (), False


def _surname_span(person: _Person, tokens: tuple[str, ...], last: int) -> tuple[range, int] | None:
    """The longest run of 2+ CNAM words spelling consecutive words of the double surname, in order.

    Each word is exact, or a cut-off prefix of 3+ letters at the truncated end ("RODRIGUEZ HERNA").
    Returns the run and its relation to the surname: exact, or truncated when a prefix was used.
    """
    compound, to_cut = _compound_surname(person)
    best: tuple[range, int] | None = None
    for start in range(len(tokens) - 1):
        for offset in range(len(compound) - 1):
            size, relation = 0, _EXACT
            while start + size < len(tokens) and offset + size < len(compound):
                token, word = tokens[start + size], compound[offset + size]
                if token != word:
                    if start + size != last or len(token) < 3 or not word.startswith(token):
                        break
                    relation = _TRUNCATED
                size += 1
            if (
                size > 1
                and (not to_cut or start + size - 1 == last)
                and (best is None or size > len(best[0]))
                and not _PARTICLES.issuperset(tokens[start : start + size])  # "DE LA" is not "de la Cruz"
            ):
                best = range(start, start + size), relation
    return best


def _person_outcome(person: _Person, cnam: _Cnam, span: tuple[range, int] | None) -> _Verdict:
    """Best reading of the CNAM words against the supplied parts in one orientation.

    `span` holds the CNAM words of the supplied double surname (`_surname_span`), if any.
    """
    assert person.given is not None
    tokens = cnam.tokens
    last = _cut_index(cnam)
    surname_rel = [_surname_relation(token, person, index == last) for index, token in enumerate(tokens)]
    given_rel = [
        _relation(token, person.given, given=True, truncated=index == last) for index, token in enumerate(tokens)
    ]
    # With the surname matched in full, a cut-off two-letter start of the given name is the given
    # name truncated ("GARCIA-LOPEZ MA" for Maria), not an initial.
    stub_rel = given_rel
    if last >= 0 and given_rel[last] < _TRUNCATED:
        stub = tokens[last]
        if len(stub) >= _GIVEN_STUB_MIN and person.given.first.startswith(stub):
            stub_rel = [*given_rel[:last], _TRUNCATED]
    # A double surname spelled out in the CNAM takes all its words, so none of them can pose as
    # the given name ("RODRIGUEZ HERNA" holds the surname only). Otherwise the surname takes one
    # word that supports it; the given name then takes the best remaining word. Choosing "no word"
    # when one exists would let an initial pass for a different name.
    if span is not None:
        readings = [(frozenset(span[0]), span[1])]
    else:
        readings = [(frozenset({index}), rel) for index, rel in enumerate(surname_rel) if rel > _NONE]
    best: _Verdict | None = None
    for surname_at, surname in readings or [(frozenset(), _NONE)]:
        rest = [index for index in range(len(tokens)) if index not in surname_at]
        ranks = stub_rel if surname == _EXACT else given_rel
        given_at = max(rest, key=ranks.__getitem__, default=None)
        leftover = [tokens[index] for index in rest if index != given_at]
        # CNAM writes a middle name after the given name (LAST FIRST MIDDLE, FIRST MIDDLE LAST); a word before it
        # is a second surname ("GARCIA CRUZ MARIA").
        after_given = [tokens[index] for index in rest if given_at is not None and index > given_at]
        given = ranks[given_at] if given_at is not None else None
        outcome = _decide_person(surname, given, leftover, person, cnam, after_given=after_given)
        if best is None or outcome.rank > best.rank:
            best = outcome
    assert best is not None
    return best


def _decide_person(
    surname: int, given: int | None, leftover: list[str], person: _Person, cnam: _Cnam, *, after_given: list[str]
) -> _Verdict:
    """The evidence table of the module docstring. `given` is None when no CNAM word was left; `after_given` holds
    the leftover words that follow the given name in the CNAM."""
    surname_ok = surname >= _TYPO
    given_ok = given is not None and given >= _TYPO
    modifiers = [_MODIFIER_REASON[rel] for rel in (surname, given) if rel in _MODIFIER_REASON]
    given_code = "nickname" if given in _NICKNAME_RELATIONS else "given_name_match"
    if surname_ok and given_ok:
        assert given is not None
        score = 100 - _PENALTY[surname] - _PENALTY[given]
        if _middle_initial_conflicts(leftover, person.middles) or _middle_name_conflicts(after_given, person, cnam):
            return _verdict("partial_match", 80, "surname_match", given_code, "middle_name_mismatch", *modifiers)
        return _verdict("match", score, "surname_match", given_code, *modifiers)
    if surname_ok and given == _INITIAL:
        return _verdict("ambiguous", 55, "surname_match", "initial_only", *modifiers)
    if surname_ok and given is None:
        return _verdict("ambiguous", 50, "surname_match", "surname_only", *modifiers)
    if surname_ok:  # another given name on file: a household member
        return _verdict("partial_match", 70 - _PENALTY[surname], "surname_match", "given_name_mismatch", *modifiers)
    if given_ok and surname == _INITIAL:
        return _verdict("ambiguous", 55, given_code, "initial_only", *modifiers)
    if given_ok and leftover:  # another surname on file: married or family name
        assert given is not None
        return _verdict("partial_match", 66 - _PENALTY[given], given_code, "surname_mismatch", *modifiers)
    if given_ok:
        return _verdict("ambiguous", 45, given_code, "given_name_only", *modifiers)
    if given == _INITIAL and (surname == _INITIAL or not leftover):  # "J S" or a lone "J"
        return _verdict("ambiguous", 40, "initial_only")
    similarity = fuzz.token_sort_ratio(person.text, cnam.text)
    if given == _INITIAL:
        return _verdict("mismatch", _in_band("mismatch", similarity), "surname_mismatch", "initial_only")
    return _verdict("mismatch", _in_band("mismatch", similarity), "surname_mismatch", "given_name_mismatch")


def _middle_initial_conflicts(leftover: list[str], middles: tuple[_Part, ...]) -> bool:
    """A CNAM middle initial contradicting every supplied middle name ("SMITH JOHN B" vs "John A Smith")."""
    if not middles:
        return False
    initials = [token for token in leftover if len(token) == 1]
    return any(all(middle.first[0] != initial for middle in middles) for initial in initials)


def _middle_name_conflicts(after_given: list[str], person: _Person, cnam: _Cnam) -> bool:
    """A whole CNAM middle name contradicting every supplied middle name ("FOX MARY LOUISE" vs "Mary Ann Fox").

    Only a word that follows the given name and is a given name in gender-guesser's table, or the cut-off end of a
    15-character CNAM there ("MILLER SARAH KA"), counts as a middle name, so a second surname ("GARCIA LOPEZ MARIA")
    never does; a nickname, a cut-off start or the initial of a supplied middle name agrees with it.
    """
    if not person.middles:
        return False
    cut = cnam.tokens[-1] if cnam.truncated else None
    return any(
        len(token) > 1
        and (token == cut or _GENDERS.get_gender(token) in _GIVEN_NAME_GENDERS)
        and all(_relation(token, middle, given=True, truncated=token == cut) == _NONE for middle in person.middles)
        for token in after_given
    )


_GIVEN_NAME_GENDERS = _MALE | _FEMALE


def _single_word_outcome(person: _Person, cnam: _Cnam) -> _Verdict:
    assert person.surname is not None
    last = len(cnam.tokens) - 1 if cnam.truncated else -1
    best = max(
        max(
            _relation(token, person.surname, given=False, truncated=index == last),
            _relation(token, person.surname, given=True, truncated=index == last),
        )
        for index, token in enumerate(cnam.tokens)
    )
    modifier = _MODIFIER_REASON.get(best)
    extra = (modifier,) if modifier else ()
    if best >= _TYPO:
        return _verdict("ambiguous", 50, "supplied_name_incomplete", *extra)
    if best == _INITIAL:
        return _verdict("ambiguous", 40, "supplied_name_incomplete", "initial_only")
    similarity = fuzz.token_sort_ratio(person.text, cnam.text)
    return _verdict("mismatch", _in_band("mismatch", similarity), "supplied_name_incomplete", "no_name_overlap")


def _match_person(supplied: str, cnam: _Cnam) -> _Verdict:
    person = _parse_person(supplied)
    if person is None:
        return _verdict("ambiguous", 40, "supplied_name_unusable")
    outcome = _person_verdict(person, cnam)
    if cnam.store_number and (outcome.state != "match" or "typo_tolerated" in outcome.reasons):
        # A chain's branch ("DENNYS 3321", "ROSS 0452") holds the chain's name: a word of it that is also the
        # person's given name or surname, or one letter off it (DENNYS is Denny's), is no evidence for the person.
        similarity = fuzz.token_sort_ratio(person.text, cnam.text)
        return _verdict("mismatch", _in_band("mismatch", similarity), "store_number")
    return outcome


def _person_verdict(person: _Person, cnam: _Cnam) -> _Verdict:
    if person.given is None:
        return _single_word_outcome(person, cnam)
    outcome = _person_reading(person, cnam)
    if outcome.state != "match":
        # A romanised name may be written as one word on one side and two on the other (JIANGUO and JIAN GUO): read
        # the CNAM again with two neighbouring words joined where the join is a whole supplied name part.
        parts = {form for part in (person.given, person.surname, *person.middles) if part for form in part.forms}
        for index in range(len(cnam.tokens) - 1):
            joined = cnam.tokens[index] + cnam.tokens[index + 1]
            if joined in parts:
                tokens = (*cnam.tokens[:index], joined, *cnam.tokens[index + 2 :])
                outcome = outcome.or_better_state(_person_reading(person, cnam._replace(tokens=tokens)))
    if person.generation and cnam.generation and person.generation != cnam.generation and outcome.state == "match":
        # The same name with another suffix is the father or the son: the same family, not the same person. A
        # suffix written on one side only says nothing.
        return _verdict("partial_match", _in_band("partial_match", 50), *outcome.reasons, "generation_mismatch")
    return outcome


def _person_reading(person: _Person, cnam: _Cnam) -> _Verdict:
    """The verdict on one reading of the CNAM's words, trying the supplied words the other way round too."""
    assert person.given is not None
    span = _surname_span(person, cnam.tokens, _cut_index(cnam))
    outcome = _person_outcome(person, cnam, span)
    if person.swappable and outcome.state != "match" and span is None:
        # Callers sometimes type "Smith Bob". CNAM order is free anyway, so the swap only matters
        # for given-name evidence (nicknames); it must win on state, not on score alone, or it
        # would recast "JOHN" vs "John Smith" as a surname-only reading. A double surname found
        # whole in the CNAM settles the order ("FERNANDEZ-GONZA" is no given name).
        # A reading that found the surname settles the order unless the swap reaches a match: "CHRISTIANSEN RO"
        # for Bob Christiansen is the surname and a stub, not a married Christiansen.
        swapped = _Person(person.surname, person.given, (), False, person.text)
        alternative = _person_outcome(swapped, cnam, None)
        if alternative.state == "match" or "surname_match" not in outcome.reasons:
            outcome = outcome.or_better_state(alternative)
    return outcome


def _diminutive_pairs() -> list[tuple[str, str]]:
    """(diminutive, full form) pairs of `diminutives.DIMINUTIVES`, folded; a two-word full form joined."""
    pairs: list[tuple[str, str]] = []
    for text in DIMINUTIVES.values():
        for entry in _phrases(text):
            nicks, _, full = entry.partition(":")
            pairs.extend(("".join(_words(nick)), "".join(_words(full))) for nick in nicks.split())
    return pairs


def _build_nicknames() -> dict[str, frozenset[str]]:
    related: dict[str, set[str]] = {}
    pairs = chain(
        ((nick, canonical) for canonical, nicks in _NICKNAMER.nickname_lookup.items() for nick in nicks),
        _diminutive_pairs(),
    )
    for nick, canonical in pairs:
        related.setdefault(canonical, set()).add(nick)
        related.setdefault(nick, set()).add(canonical)
    return {name: frozenset(names) for name, names in related.items()}


_NICKNAMES = _build_nicknames()

# --------------------------------------------------------------------------- businesses

_BUSINESS_NOISE = frozenset({"the", "and"})
# Letters joined by an unspaced "&" are one acronym ("AT&T", "PG&E", "H&R"), not two words.
_AMPERSAND_ACRONYM = re.compile(r"\b([a-z]{1,3})&([a-z]{1,3})\b", re.IGNORECASE)


# cleanco's legal-form terms ("inc", "llc", "pty ltd", ...) indexed by length for O(1) suffix checks.
def _legal_terms() -> dict[int, frozenset[tuple[str, ...]]]:
    by_size: dict[int, set[tuple[str, ...]]] = {}
    for size, parts in prepare_default_terms():
        by_size.setdefault(size, set()).add(tuple(parts))
    return {size: frozenset(terms) for size, terms in by_size.items()}


_LEGAL_TERMS = _legal_terms()
_LEGAL_SIZES = sorted(_LEGAL_TERMS, reverse=True)
# Whole words a cut-off CNAM stub may come from ("CORPO" from "CORPORATION").
_LEGAL_WORDS = frozenset(word for terms in _LEGAL_TERMS.values() for term in terms for word in term) | {
    "corporation",
    "incorporated",
    "company",
    "limited",
}

# Abbreviations of the words in business names. The maintained list is reporters-db's table of the common words in
# case names (the Bluebook's table T6: ASS'N, BROS., CONSTR., CTR., DEP'T, DIST., ENG'R, HOSP., INT'L, MFG., MGMT.,
# SYS., TECH., UNIV., ... 189 entries), read as folded here (ASSN, DEPT, INTL). Two edits to it: the short forms that
# are English words in their own right, which a business name carries as themselves (a BUS company, a PUB, COAL), are
# left out; and the short forms carriers and directory listings use that T6 does not have (SVCS, MGT, PLBG, HTG,
# RLTY, ...) are added below, as are the meanings T6 leaves out of a short form it has (DIST for distributors, ENGR
# for engineering). A plural is the short form plus S (SERVS, ASSOCS), as in T6, and each meaning stands for its
# plural too, as carriers drop the S (ASSOC for associates).
_NOT_ABBREVIATIONS = _word_set("all am bus coal def det dig disc equal found mar no op pub ref rest ret sol sur temp")
_CARRIER_ABBREVIATIONS_TEXT = """
    svc srvc srv svcs srvcs svs: service|svcs srvcs svs: services|mgt: management|assoc assocs: associates
    plbg plmbg: plumbing|htg: heating|clng: cleaning|const cnstr constrn: construction|contr cntr: contractor
    contrs cntrs: contractors|bldr: builder|bldrs: builders|rlty: realty|ptnrs prtnrs: partners|ptnr prtnr: partner
    hldg: holding|hldgs: holdings|ent entpr enterp: enterprise|ents entprs: enterprises|soln: solution
    solns: solutions|acctg: accounting|acct: accounting|accts: accountants|bk bnk: bank|svgs: savings|mtg: mortgage
    dntl dent: dental|chiro: chiropractic|clnc clin: clinic|hlth: health|ins: insurance|mtr: motor|mtrs: motors
    elect electr: electric|sply supp suppl: supply|splys: supplies|whse: warehouse|whsl whsle: wholesale
    dist: distributors|dist: distributing|dist: distribution|distr: distribution|distrs: distributors
    ft: fort|mt: mount|pt: point|pt: port|st: saint
    trkg: trucking|trans transp: transportation|lndscp lndscpg: landscaping|rstrnt: restaurant|comm: communications
    comms: communications|telecom: telecommunications|amer: american|ch chr chrch: church|min: ministries
    fdn: foundation|cntr: center|ofc: office|indl: industrial|inds: industries|prods: products|ther: therapy
    thrpy: therapy|fam: family|devel: development|enviro: environmental|archt: architects|engrg eng: engineering
    engr: engineering|engrs: engineers|cnsltg consltg: consulting|cnslt conslt: consultants|cap: capital
    tech: technologies|tech: technical|grp: group|labs: laboratories|vet: veterinary|anml: animal|mkt: market
    intl: international|natl: national|univ: university|co: company|corp: corporation|assn: association
    """


def _keyed_lines(text: str) -> list[tuple[list[str], list[str]]]:
    """("KEY KEY: WORD WORD" entries, one per line or "|"-separated) as (keys, words) pairs."""
    return [(keys.split(), words.split()) for keys, _, words in (line.partition(":") for line in _phrases(text))]


def _plural(word: str) -> str:
    if word.endswith("y") and word[-2:-1] not in ("a", "e", "o", "u"):
        return word[:-1] + "ies"
    return word if word.endswith("s") else word + "s"


def _abbreviations() -> dict[str, frozenset[str]]:
    """Short form -> the folded words it stands for (each with its plural)."""
    spec = importlib.util.find_spec("reporters_db")
    assert spec is not None
    assert spec.submodule_search_locations
    # Read the one table directly: importing reporters_db loads its whole database of law reporters (about 40 ms).
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "case_name_abbreviations.json"
    table: dict[str, set[str]] = {}

    def add(short: str, meanings: list[str]) -> None:
        key = "".join(_WORD.findall(_fold(short)))
        words = [_fold(meaning) for meaning in meanings if _WORD.fullmatch(_fold(meaning))]
        if not key.isalpha() or key in _NOT_ABBREVIATIONS or not words:
            return
        table.setdefault(key, set()).update(chain.from_iterable((word, _plural(word)) for word in words))
        if not key.endswith("s"):  # SERVS, ASSOCS
            table.setdefault(key + "s", set()).update(_plural(word) for word in words)

    for short, meanings in json.loads(path.read_text(encoding="utf-8")).items():
        add(short, meanings)
    for shorts, meanings in _keyed_lines(_CARRIER_ABBREVIATIONS_TEXT):
        for short in shorts:
            add(short, meanings)
    return {short: frozenset(meanings - {short}) for short, meanings in table.items()}


_ABBREVIATIONS = _abbreviations()


def _same_business_word(a: str, b: str) -> bool:
    """Whether two words are one word, or one abbreviates the other, or both abbreviate one word (SVCS, SERVS)."""
    if a == b:
        return True
    of_a, of_b = _ABBREVIATIONS.get(a, frozenset()), _ABBREVIATIONS.get(b, frozenset())
    return b in of_a or a in of_b or not of_a.isdisjoint(of_b)


class _Business(NamedTuple):
    words: tuple[str, ...]
    """Folded words with THE/AND removed, legal forms kept (what a truncated CNAM is cut from)."""
    key: tuple[str, ...]
    """`words` without trailing legal forms: the name that is compared."""


def _strip_legal_forms(words: tuple[str, ...]) -> tuple[str, ...]:
    """Remove trailing legal forms repeatedly ("ACME CO INC" -> "ACME"), keeping at least one word."""
    stripped = True
    while stripped:
        stripped = False
        for size in _LEGAL_SIZES:
            if len(words) > size and words[-size:] in _LEGAL_TERMS[size]:
                words = words[:-size]
                stripped = True
                break
    return words


@lru_cache(maxsize=4096)
def _parse_business(name: str) -> _Business:
    # Dots join abbreviations ("L.L.C.", "Inc.") so they meet cleanco's undotted terms; "AT&T" is one word.
    joined = _AMPERSAND_ACRONYM.sub(r"\1\2", name.replace(".", ""))
    words = tuple(word for word in _words(joined) if word not in _BUSINESS_NOISE)
    return _Business(words, _strip_legal_forms(words))


def _match_business(supplied: str, cnam_name: str, truncated: bool) -> _Verdict:
    ours, theirs = _parse_business(supplied), _parse_business(cnam_name)
    if not ours.key:
        return _verdict("ambiguous", 40, "supplied_name_unusable")
    number = theirs.words[-1] if theirs.words else ""
    if len(theirs.words) < 2 or not _has_store_number(list(theirs.words)) or number in ours.words:
        return _compare_business(ours, theirs, truncated)
    # A chain's branch: the store number is no part of the name, and the CNAM may keep only the brand's first words
    # ("STARBUCKS 1123" for Starbucks Coffee).
    words = theirs.words[:-1]
    theirs = _Business(words, _strip_legal_forms(words))
    outcome = _compare_business(ours, theirs, truncated=False)
    if outcome.state != "match" and ours.key[: len(theirs.key)] == theirs.key and len("".join(theirs.key)) >= 4:
        outcome = _verdict("match", 90, "business_name_match")
    return _Verdict(outcome.state, outcome.score, (*outcome.reasons, "store_number"))


def _compare_business(ours: _Business, theirs: _Business, truncated: bool) -> _Verdict:
    if not theirs.key:
        return _verdict("mismatch", 0, "business_name_mismatch")
    outcome = _compare_business_keys(ours.key, theirs.key)
    if truncated and outcome.score < 98 and _truncated_business_match(ours, theirs):
        outcome = _verdict("match", 94, "business_name_match", "cnam_truncated")
    if outcome.state == "match":
        return outcome
    # Carriers abbreviate words (MFG, SVCS, INTL) and whole names (GE CO, IBM): compare again with the abbreviations
    # spelled as the other side spells them. An acronym must account for the whole name; an abbreviated word may
    # also make a near match or a subset.
    spelled = _spell_abbreviations(ours.key, theirs.key)
    if spelled != theirs.key:
        alternative = _compare_business_keys(ours.key, spelled)
        if alternative.state == "match":
            return _verdict("match", 92, "business_name_match", "business_abbreviation")
        if truncated and _truncated_business_match(ours, _Business(spelled, spelled)):  # "MT SINAI HOSPIT"
            return _verdict("match", 90, "business_name_match", "business_abbreviation", "cnam_truncated")
        outcome = outcome.or_better_state(
            _verdict(alternative.state, alternative.score, *alternative.reasons, "business_abbreviation")
        )
    if _acronym_reading(ours.key, spelled):
        return _verdict("match", 90, "business_name_match", "business_abbreviation")
    return outcome.or_better_state(_professional_reading(ours.key, theirs.words))


def _compare_business_keys(ours: tuple[str, ...], theirs: tuple[str, ...]) -> _Verdict:
    ours_text, theirs_text = " ".join(ours), " ".join(theirs)
    ours_flat, theirs_flat = ours_text.replace(" ", ""), theirs_text.replace(" ", "")
    if ours_text == theirs_text:
        return _verdict("match", 100, "business_name_match")
    if ours_flat == theirs_flat:  # "MC DONALDS" vs "McDonald's"
        return _verdict("match", 98, "business_name_match")
    similarity = max(fuzz.token_sort_ratio(ours_text, theirs_text), fuzz.ratio(ours_flat, theirs_flat))
    if similarity == 100:  # same words in another order
        return _verdict("match", 96, "business_name_match")
    if similarity >= 80:
        return _verdict("partial_match", 60 + (similarity - 80) * 1.2, "business_name_similar")
    shorter, longer = sorted((set(ours), set(theirs)), key=len)
    if shorter <= longer and len("".join(shorter)) >= 4:
        return _verdict("partial_match", 62, "business_name_subset")
    return _verdict("mismatch", _in_band("mismatch", similarity), "business_name_mismatch")


def _truncated_business_match(ours: _Business, theirs: _Business) -> bool:
    """A 15-character CNAM cut from the supplied name, possibly mid legal form ("MCDONALDS CORPO")."""
    cut = "".join(theirs.words)
    if len(cut) >= 4 and "".join(ours.words).startswith(cut):
        return True
    stub = theirs.words[-1]
    if len(theirs.words) > 1 and len(stub) > 1 and any(word.startswith(stub) for word in _LEGAL_WORDS):
        return _strip_legal_forms(theirs.words[:-1]) == ours.key
    return False


def _spell_abbreviations(ours: tuple[str, ...], theirs: tuple[str, ...]) -> tuple[str, ...]:
    """`theirs` with each word not in `ours` that abbreviates one there (or is abbreviated by it) spelled as there."""
    return tuple(
        word
        if word in ours
        else next((other for other in ours if other not in theirs and _same_business_word(word, other)), word)
        for word in theirs
    )


def _acronym_reading(ours: tuple[str, ...], theirs: tuple[str, ...]) -> bool:
    """Whether one word on one side is the initials of two or more neighbouring words on the other, and the rest of
    the two names is the same: "GE" for General Electric, "SJ PLUMBING" for Smith Johnson Plumbing, "IBM" for INTL
    BUS MACH. A cut CNAM may end in the first letter of its last word ("UNITED PARCEL S")."""
    for short, long in ((theirs, ours), (ours, theirs)):
        for at, word in enumerate(short):
            size = len(word)
            if not _ACRONYM_SIZES[0] <= size <= _ACRONYM_SIZES[1] or word in long:
                continue
            rest = (*short[:at], *short[at + 1 :])
            for start in range(len(long) - size + 1):
                run = long[start : start + size]
                if "".join(part[0] for part in run) == word and (*long[:start], *long[start + size :]) == rest:
                    return True
    return False


_ACRONYM_SIZES = (2, 6)

# A person's name with a professional suffix on a business line ("PARK SUSAN CPA"). The credentials are nameparser's
# post-nominal acronyms (CPA, DDS, DMD, DVM, MD, DO, OD, PHD, RN, ... about 600) and its word ESQ, with ATTY and
# ATTORNEY added. The trade each common credential practises, so that the business name can be checked against it
# ("Susan Park Accounting" is the practice of PARK SUSAN CPA; "Susan Park Realty" is another business of hers):
_TRADES_TEXT = """
    cpa ea cfp cma cia acct: accounting accountant accountants accountancy tax taxes bookkeeping cpas audit financial
    esq esquire atty attorney jd llm: law legal attorney attorneys lawyer lawyers counsel justice
    dds dmd: dental dentistry dentist dentists orthodontics orthodontic endodontics periodontics smile smiles oral
    md do pa np fnp rn aprn dnp: medical medicine clinic health healthcare pediatrics pediatric physicians physician
    md do pa np fnp rn aprn dnp: doctors care internal surgery surgical dermatology cardiology urgent wellness nursing
    dvm vmd: veterinary vet animal animals pet pets hospital clinic
    od: optometry optometric eye eyecare vision optical
    dc: chiropractic chiropractor spine
    dpm: podiatry podiatric foot ankle
    pt dpt: physical therapy rehab rehabilitation physiotherapy
    phd psyd lcsw lpc lmft: psychology psychological counseling therapy behavioral mental
    pe eit: engineering engineers
    aia ra: architecture architects architect
    """
# Words any practice may carry ("Park & Associates", "Law Office of ...", "Family Dentistry").
_PRACTICE_WORDS = _word_set("associates assoc office offices group practice partners firm services of at family center")


def _trades() -> dict[str, frozenset[str]]:
    table: dict[str, set[str]] = {}
    for credentials, words in _keyed_lines(_TRADES_TEXT):
        for credential in credentials:
            table.setdefault(credential, set()).update(words)
    return {credential: frozenset(words) for credential, words in table.items()}


_TRADES = _trades()
_CREDENTIALS = frozenset(
    word for word in chain(SUFFIX_ACRONYMS, ("esq", "esquire", "atty", "attorney"), _TRADES) if word.isalpha()
)


def _professional_reading(ours: tuple[str, ...], cnam_words: tuple[str, ...]) -> _Verdict:
    """The CNAM as a person's name with a professional suffix, weighed against the business name.

    The person's whole name (two or more words) in the business name is a match when every other word of the
    business name is the person's trade or a practice word, else a partial match; part of the name (the surname)
    with such words only is a partial match; the trade alone, with no name in common, is ambiguous. Anything else is
    a mismatch (the caller's verdict stands).
    """
    words = _strip_legal_forms(cnam_words)
    credentials: list[str] = []
    while len(words) > 1 and words[-1] in _CREDENTIALS:
        credentials.append(words[-1])
        words = _strip_legal_forms(words[:-1])
    if not credentials or len(words) > _PERSON_WORDS_MAX:
        return _verdict("mismatch", 0, "business_name_mismatch")
    trade = frozenset(chain.from_iterable(_TRADES.get(credential, ()) for credential in credentials))
    supplied = [word for word in ours if word not in _CREDENTIALS and word not in _HONORIFICS]
    named = [word for word in words if word in supplied]
    others = [word for word in supplied if word not in words]
    fits = all(word in trade or word in _PRACTICE_WORDS for word in others)
    if len(named) == len(words) >= 2:
        if fits:
            return _verdict("match", 88, "professional_name")
        return _verdict("partial_match", 70, "professional_name")
    if named and fits:
        return _verdict("partial_match", 66, "professional_name")
    if not named and not trade.isdisjoint(supplied):
        return _verdict("ambiguous", 45, "professional_name")
    return _verdict("mismatch", 0, "business_name_mismatch")


# At most this many words of a CNAM before a professional suffix are read as a person's name.
_PERSON_WORDS_MAX = 3
_STATE_CODE_LENGTH = 2
_BUSINESS_STUB_MIN = 4

# Words that name a trade or a kind of business, so that a CNAM holding one is a business's name even when it starts
# like a place (FT MYERS DENTAL, ST LUKES CLINIC, MT SINAI HOSPIT): the meanings of the abbreviation table above, the
# trades of the professional suffixes, the legal forms, and the storefront words below (ours: carriers' business
# listings that the other tables lack). Words that also name places (CENTER, PARK, POINT, FORT, SAINT, ...) are left
# out, or PORT ST LUCIE F would read as a business.
_STOREFRONT_WORDS = _word_set(
    "deli pizza pizzeria cafe grill bakery salon spa barber auto autos motors tire tires pharmacy drug drugs "
    "dentistry dental clinic clinics hospital church school academy restaurant diner market liquor cleaners "
    "laundry hardware florist nursery pets vet insurance bank realty plumbing heating cooling roofing"
)
_NOT_BUSINESS_WORDS = _PLACE_WORDS | _CITY_WORDS | _word_set("fort mount mountain port point saint street of the and")
_BUSINESS_WORDS = (
    frozenset(
        chain(
            chain.from_iterable(_ABBREVIATIONS.values()),
            chain.from_iterable(_TRADES.values()),
            (word for word in _LEGAL_WORDS if len(word) > _STATE_CODE_LENGTH),
            _STOREFRONT_WORDS,
        )
    )
    - _NOT_BUSINESS_WORDS
)
# Cut-off starts (4+ letters) of business words that start no place word: HOSPIT, DENTA, but not BEAC (BEACH).
_BUSINESS_WORD_STARTS = frozenset(
    word[:size] for word in _BUSINESS_WORDS for size in range(_BUSINESS_STUB_MIN, len(word))
) - frozenset(word[:size] for word in _NOT_BUSINESS_WORDS for size in range(_BUSINESS_STUB_MIN, len(word) + 1))


# --------------------------------------------------------------------------- entry point


def _unavailable(caller_id: CallerId) -> NameMatch | None:
    if caller_id.state == "available" and caller_id.name and caller_id.name.strip():
        return None
    reason = {"placeholder": "caller_id_placeholder", "error": "caller_id_error"}.get(
        caller_id.state, "caller_id_unavailable"
    )
    return NameMatch(state="unavailable", score=None, reasons=[reason])


def match_name(
    supplied: str,
    caller_id: CallerId,
    subject_type: SubjectType,
    caller_type: str | None = None,
) -> NameMatch:
    """Compare a supplied person or business name with an available caller-ID name."""
    if subject_type not in ("person", "business"):
        raise ValueError(f"subject_type must be 'person' or 'business', not {subject_type!r}")
    unavailable = _unavailable(caller_id)
    if unavailable is not None:
        return unavailable
    assert caller_id.name is not None
    if not any(word for word in _words(caller_id.name) if not word.isdigit()):
        # Only a hand-built CallerId gets here; read_caller_id files these under placeholder.
        return NameMatch(state="unavailable", score=None, reasons=["caller_id_placeholder"])
    kind = (caller_type or "").strip().upper()
    if subject_type == "person":
        cnam = _parse_cnam(caller_id.name)
        outcome = _match_person(supplied, cnam)
        other_kind = "caller_type_business" if kind == "BUSINESS" or cnam.business_like else None
    else:
        outcome = _match_business(supplied, caller_id.name, _is_cut(caller_id.name))
        other_kind = "caller_type_consumer" if kind == "CONSUMER" else None
    if other_kind and "supplied_name_unusable" not in outcome.reasons:
        # A work phone (or an owner's own phone) is expected to carry another name: no mismatch.
        if outcome.state == "mismatch":
            outcome = _verdict("ambiguous", 40, *outcome.reasons, other_kind)
        else:
            outcome = _Verdict(outcome.state, outcome.score, (*outcome.reasons, other_kind))
    reasons = sorted(outcome.reasons, key=_REASON_ORDER.__getitem__)
    return NameMatch(state=outcome.state, score=outcome.score, reasons=reasons)
