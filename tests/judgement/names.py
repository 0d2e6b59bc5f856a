"""Caller-ID/name pairs labelled as a careful reviewer would, one kind of hard case each (issue 14).

Every pair says what a reviewer who knows US caller-ID data would call it and why; `judge` runs the pair through the
same calls as the service (read_caller_id, then match_name), so a placeholder CNAM is judged ``unavailable``. The kinds
are the name-match misses of issue 14: gendered forms of one name, generational suffixes, business abbreviations and
acronyms, a person's name with a professional suffix on a business line, abbreviated rate centres, surnames that begin
another surname, and romanised names written with or without spaces. Each kind holds near misses too: the pairs that
must not be pulled along (an abbreviation of another word, a real person whose CNAM starts with ST). CNAM strings are
at most 15 characters, as carriers send them.
"""

from __future__ import annotations

from dataclasses import dataclass

from processors.phone.name_match import match_name, read_caller_id

__all__ = ["CASES", "KINDS", "NamePair", "judge"]

KINDS = (
    "gendered",
    "generational",
    "business_abbreviation",
    "business_acronym",
    "professional_suffix",
    "rate_centre",
    "surname_prefix",
    "romanised",
)


@dataclass(frozen=True)
class NamePair:
    kind: str
    supplied: str
    cnam: str
    subject_type: str
    caller_type: str | None
    expected: str
    """The name-match state a careful reviewer gives the pair (``unavailable`` for a placeholder CNAM)."""
    why: str


def judge(pair: NamePair) -> str:
    """The name-match state the service gives the pair: the caller-ID is read, then compared (`match_name`)."""
    caller_id = read_caller_id(pair.cnam)
    return match_name(pair.supplied, caller_id, pair.subject_type, pair.caller_type).state  # type: ignore[arg-type]


def _person(kind: str, supplied: str, cnam: str, expected: str, why: str, caller_type: str | None = None) -> NamePair:
    return NamePair(kind, supplied, cnam, "person", caller_type, expected, why)


def _business(kind: str, supplied: str, cnam: str, expected: str, why: str, caller_type: str | None = None) -> NamePair:
    return NamePair(kind, supplied, cnam, "business", caller_type, expected, why)


_GENDERED = "gendered"
_GENERATIONAL = "generational"
_ABBREVIATION = "business_abbreviation"
_ACRONYM = "business_acronym"
_PROFESSIONAL = "professional_suffix"
_RATE_CENTRE = "rate_centre"
_PREFIX = "surname_prefix"
_ROMANISED = "romanised"

_SIBLING = "The male and the female form of one given name on the same surname: a sibling or spouse, not a typo."

CASES: list[NamePair] = [
    # ------------------------------------------------------------------ gendered forms of one name
    _person(_GENDERED, "Gabriela Lopez", "LOPEZ GABRIEL", "partial_match", _SIBLING),
    _person(_GENDERED, "Julian Ross", "ROSS JULIANA", "partial_match", _SIBLING),
    _person(_GENDERED, "Paul Smith", "SMITH PAULA", "partial_match", _SIBLING),
    _person(_GENDERED, "Antonia Ruiz", "RUIZ ANTONIO", "partial_match", _SIBLING),
    _person(_GENDERED, "Roberto Diaz", "DIAZ ROBERTA", "partial_match", _SIBLING),
    _person(_GENDERED, "Francisca Vega", "VEGA FRANCISCO", "partial_match", _SIBLING),
    _person(_GENDERED, "Daniel Kim", "KIM DANIELA", "partial_match", _SIBLING),
    _person(_GENDERED, "Mario Rossi", "ROSSI MARIA", "partial_match", _SIBLING),
    _person(_GENDERED, "Louis Martin", "MARTIN LOUISE", "partial_match", _SIBLING),
    _person(_GENDERED, "Alexandra Cho", "CHO ALEXANDER", "partial_match", _SIBLING),
    _person(_GENDERED, "Victoria Chen", "CHEN VICTOR", "partial_match", _SIBLING),
    _person(_GENDERED, "Eric Stone", "STONE ERICA", "partial_match", _SIBLING),
    _person(_GENDERED, "Carla Gomez", "GOMEZ CARLO", "partial_match", _SIBLING),
    _person(
        _GENDERED, "Micheal Lee", "LEE MICHAEL", "match", "Two spellings of one male name: a slip, the same person."
    ),
    _person(_GENDERED, "Kristen Ray", "RAY KRISTIN", "match", "Two spellings of one female name: the same person."),
    _person(_GENDERED, "Gabriel Lopez", "LOPEZ GABRIEL", "match", "The same name in CNAM order."),
    _person(_GENDERED, "Louise Grant", "GRANT LOU", "match", "Lou is a nickname of Louise as much as of Louis."),
    _person(_GENDERED, "Alexandra Cho", "CHO ALEX", "match", "Alex is a nickname of Alexandra too."),
    _person(
        _GENDERED,
        "Gabriela Lopez",
        "GARCIA GABRIEL",
        "mismatch",
        "Another surname and only the other gender's form of the given name: nothing of the person agrees.",
    ),
    # ------------------------------------------------------------------ generational suffixes
    _person(_GENERATIONAL, "Robert Smith Jr", "SMITH ROBERT SR", "partial_match", "Junior, senior: son and father."),
    _person(_GENERATIONAL, "Robert Smith Sr.", "SMITH ROBERT JR", "partial_match", "Senior, junior: father and son."),
    _person(_GENERATIONAL, "James Carter III", "CARTER JAMES II", "partial_match", "The third, the second: two men."),
    _person(
        _GENERATIONAL, "Bob Smith Jr", "SMITH ROBERT SR", "partial_match", "A nickname, but junior against senior."
    ),
    _person(_GENERATIONAL, "William Brown II", "BROWN WILLIAM III", "partial_match", "II and III: father and son."),
    _person(_GENERATIONAL, "Henry Ford IV", "FORD HENRY III", "partial_match", "IV and III: son and father."),
    _person(_GENERATIONAL, "Thomas Reed Sr", "REED THOMAS II", "partial_match", "Senior against II: two generations."),
    _person(
        _GENERATIONAL, "George Foreman Jr", "FOREMAN GEORGE SR", "partial_match", "Junior against senior: the father."
    ),
    _person(_GENERATIONAL, "Robert Smith Jr.", "SMITH ROBERT JR", "match", "The same suffix on both sides."),
    _person(_GENERATIONAL, "Robert Smith", "SMITH ROBERT JR", "match", "A suffix on one side only says nothing."),
    _person(_GENERATIONAL, "Robert Smith Sr", "SMITH ROBERT", "match", "A suffix on one side only says nothing."),
    _person(_GENERATIONAL, "John Davis Jr.", "DAVIS JOHN JR", "match", "The same suffix, punctuated differently."),
    _person(_GENERATIONAL, "Samuel Jackson Jr", "JACKSON SAMUEL JR", "match", "The same name and suffix."),
    _person(_GENERATIONAL, "Michael Johnson III", "JOHNSON MIKE III", "match", "A nickname with the same suffix."),
    _person(
        _GENERATIONAL,
        "Robert Smith Jr",
        "SMITH ALAN SR",
        "partial_match",
        "Another given name on the surname: a household member, whatever the suffix.",
    ),
    _person(_GENERATIONAL, "Paul Walker Jr", "GREEN PETER JR", "mismatch", "Only the suffix agrees: another person."),
    # ------------------------------------------------------------------ business abbreviations, both ways
    _business(_ABBREVIATION, "Acme Manufacturing", "ACME MFG CO", "match", "MFG is short for manufacturing."),
    _business(_ABBREVIATION, "Global Services LLC", "GLOBAL SVCS LLC", "match", "SVCS is services."),
    _business(_ABBREVIATION, "Pacific International", "PACIFIC INTL", "match", "INTL is international."),
    _business(_ABBREVIATION, "Summit Management Group", "SUMMIT MGMT GRP", "match", "MGMT and GRP: management group."),
    _business(_ABBREVIATION, "Johnson Brothers Inc", "JOHNSON BROS", "match", "BROS is brothers; INC is a legal form."),
    _business(_ABBREVIATION, "Mercy Hospital", "MERCY HOSP", "match", "HOSP is hospital."),
    _business(_ABBREVIATION, "Stanford University", "STANFORD UNIV", "match", "UNIV is university."),
    _business(_ABBREVIATION, "Harbor Medical Center", "HARBOR MED CTR", "match", "MED CTR is medical center."),
    _business(_ABBREVIATION, "Teachers Association", "TEACHERS ASSN", "match", "ASSN is association."),
    _business(_ABBREVIATION, "Apex Engineering", "APEX ENGR", "match", "ENGR is engineering (or engineers)."),
    _business(_ABBREVIATION, "Keystone Construction", "KEYSTONE CONSTR", "match", "CONSTR is construction."),
    _business(_ABBREVIATION, "Delta Technologies", "DELTA TECH", "match", "TECH is technology or technologies."),
    _business(_ABBREVIATION, "Orion Systems Inc", "ORION SYS INC", "match", "SYS is systems."),
    _business(_ABBREVIATION, "City Fire Department", "CITY FIRE DEPT", "match", "DEPT is department."),
    _business(_ABBREVIATION, "Oak Fire District", "OAK FIRE DIST", "match", "DIST is district."),
    _business(_ABBREVIATION, "Smith & Associates", "SMITH ASSOC", "match", "ASSOC is associates."),
    _business(_ABBREVIATION, "Apex Svcs", "APEX SERVICES", "match", "The supplied name carries the abbreviation."),
    _business(_ABBREVIATION, "Orion Sys", "ORION SYSTEMS", "match", "The supplied name carries the abbreviation."),
    _business(_ABBREVIATION, "Bay Hosp", "BAY HOSPITAL", "match", "The supplied name carries the abbreviation."),
    _business(_ABBREVIATION, "Rapid Plumbing & Heating", "RAPID PLBG HTG", "match", "PLBG and HTG: plumbing, heating."),
    _business(_ABBREVIATION, "National Realty", "NATL REALTY", "match", "NATL is national."),
    _business(
        _ABBREVIATION,
        "Acme Manufacturing Services",
        "ACME MFG",
        "partial_match",
        "The caller-ID holds part of the name, abbreviated: the same firm or a part of it.",
    ),
    _business(_ABBREVIATION, "Acme Management", "ACME MFG", "mismatch", "MFG is manufacturing, not management."),
    _business(_ABBREVIATION, "Delta Systems", "DELTA SVCS", "mismatch", "SVCS is services, not systems."),
    _business(_ABBREVIATION, "Pacific Insurance", "PACIFIC INTL", "mismatch", "INTL is international, not insurance."),
    _business(_ABBREVIATION, "Orion Consulting", "ORION CONSTR", "mismatch", "CONSTR is construction, not consulting."),
    _business(_ABBREVIATION, "Apex Engineering", "APEX ENTMT", "mismatch", "ENTMT is entertainment, not engineering."),
    # ------------------------------------------------------------------ business acronyms
    _business(_ACRONYM, "General Electric Company", "GE CO", "match", "GE is the initials of General Electric."),
    _business(_ACRONYM, "International Business Machines", "IBM CORP", "match", "IBM is the initials of the name."),
    _business(_ACRONYM, "Pacific Gas and Electric", "PG&E", "match", "PG&E: the initials, AND written as &."),
    _business(_ACRONYM, "American Telephone and Telegraph", "AT&T", "match", "AT&T: the initials, AND written as &."),
    _business(_ACRONYM, "Kansas City Power and Light", "KCP&L", "match", "KCP&L: the initials of the utility."),
    _business(_ACRONYM, "Smith Johnson Plumbing LLC", "SJ PLUMBING LLC", "match", "SJ: the two surnames' initials."),
    _business(_ACRONYM, "Advanced Business Solutions Inc", "ABS INC", "match", "ABS: the initials of the name."),
    _business(_ACRONYM, "United Parcel Service", "UPS", "match", "UPS: the initials of the name."),
    _business(_ACRONYM, "Hewlett Packard Enterprise", "HPE", "match", "HPE: the initials of the name."),
    _business(_ACRONYM, "Bright Horizons Academy", "BHA", "match", "BHA: the initials of the name."),
    _business(_ACRONYM, "IBM", "INTL BUS MACH", "match", "The supplied acronym spelled out in abbreviations."),
    _business(_ACRONYM, "UPS", "UNITED PARCEL S", "match", "The supplied acronym spelled out, cut at 15."),
    _business(_ACRONYM, "Pacific Gas and Electric", "PGE CORP", "match", "PGE: the initials without the &."),
    _business(_ACRONYM, "General Electric Company", "GM CO", "mismatch", "GM is not the initials of General Electric."),
    _business(_ACRONYM, "International Business Machines", "IBS CORP", "mismatch", "IBS is not IBM."),
    _business(_ACRONYM, "Advanced Business Solutions", "ABC INC", "mismatch", "ABC is not the initials of the name."),
    _business(_ACRONYM, "Hewlett Packard", "HPE", "mismatch", "HPE has a letter the supplied name has no word for."),
    _business(_ACRONYM, "Bright Horizons Academy", "BHS", "mismatch", "BHS is not the initials of the name."),
    # ------------------------------------------------------------------ a person with a professional suffix
    _business(_PROFESSIONAL, "Susan Park CPA", "PARK SUSAN CPA", "match", "The practice is the CPA herself."),
    _business(
        _PROFESSIONAL,
        "Park & Associates",
        "PARK SUSAN CPA",
        "partial_match",
        "A CPA named Park on a firm named after Park: evidence for the firm, though the given name is not in it.",
    ),
    _business(
        _PROFESSIONAL,
        "Susan Park Accounting",
        "PARK SUSAN CPA",
        "match",
        "Susan Park, CPA, is Susan Park Accounting: the same name and the same trade.",
    ),
    _business(_PROFESSIONAL, "Law Office of David Cohen", "COHEN DAVID ESQ", "match", "The lawyer whose office it is."),
    _business(
        _PROFESSIONAL,
        "David Cohen Attorney at Law",
        "COHEN DAVID ATTY",
        "match",
        "The attorney it is named for.",
    ),
    _business(_PROFESSIONAL, "James Lee DDS PC", "LEE JAMES DDS", "match", "The dentist and his practice."),
    _business(
        _PROFESSIONAL,
        "Lee Family Dentistry",
        "LEE JAMES DDS",
        "partial_match",
        "A dentist named Lee on a dental practice named Lee: the surname and the trade agree.",
    ),
    _business(_PROFESSIONAL, "Maria Ortiz DVM", "ORTIZ MARIA DVM", "match", "The vet herself."),
    _business(
        _PROFESSIONAL,
        "Ortiz Veterinary Hospital",
        "ORTIZ MARIA DVM",
        "partial_match",
        "A vet named Ortiz on an animal hospital named Ortiz.",
    ),
    _business(_PROFESSIONAL, "Daniel Kim MD", "KIM DANIEL MD", "match", "The doctor himself; MD is no state here."),
    _business(
        _PROFESSIONAL, "Daniel Kim Medical Clinic", "KIM DANIEL MD", "match", "The doctor the clinic is named after."
    ),
    _business(
        _PROFESSIONAL,
        "Kim Pediatrics",
        "KIM DANIEL MD",
        "partial_match",
        "A doctor named Kim on a paediatric practice named Kim.",
    ),
    _business(
        _PROFESSIONAL,
        "Kim Medical Group",
        "KIM MD",
        "partial_match",
        "Doctor Kim on a medical group named Kim; MD is the degree, not Maryland.",
    ),
    _business(_PROFESSIONAL, "Ana Rivera Law", "RIVERA ANA ATTY", "match", "The attorney the practice is named after."),
    _business(
        _PROFESSIONAL,
        "Rivera Law Firm",
        "RIVERA ANA ESQ",
        "partial_match",
        "A lawyer Rivera, a law firm Rivera.",
    ),
    _business(
        _PROFESSIONAL,
        "Nguyen Tax Services",
        "NGUYEN LAN CPA",
        "partial_match",
        "A CPA named Nguyen on a tax practice named Nguyen.",
    ),
    _business(
        _PROFESSIONAL,
        "Smith Orthodontics",
        "SMITH JOHN DMD",
        "partial_match",
        "A dentist named Smith on an orthodontic practice named Smith.",
    ),
    _business(
        _PROFESSIONAL,
        "Bright Smile Dental",
        "LEE JAMES DDS",
        "ambiguous",
        "A dentist's line for a dental practice that carries no name: it may be the owner's, nothing says so.",
    ),
    _business(
        _PROFESSIONAL,
        "Susan Park Realty",
        "PARK SUSAN CPA",
        "partial_match",
        "The same person's name, but a CPA is not a realty: perhaps her other business.",
    ),
    _business(_PROFESSIONAL, "Green Valley Dental", "PARK SUSAN CPA", "mismatch", "No name and no trade in common."),
    _business(
        _PROFESSIONAL,
        "Park Dental",
        "PARK SUSAN CPA",
        "mismatch",
        "A surname in common; a CPA is no dentist.",
    ),
    _person(
        _PROFESSIONAL,
        "Susan Park",
        "PARK SUSAN CPA",
        "match",
        "The person herself, her credential on her line.",
        caller_type="BUSINESS",
    ),
    # ------------------------------------------------------------------ rate centres with abbreviated words
    _person(_RATE_CENTRE, "Maria Lopez", "FT LAUDERDALE F", "unavailable", "Fort Lauderdale, FL, cut at 15."),
    _person(_RATE_CENTRE, "Maria Lopez", "ST PETERSBURG F", "unavailable", "Saint Petersburg, FL, cut at 15."),
    _person(_RATE_CENTRE, "Maria Lopez", "MT PLEASANT SC", "unavailable", "Mount Pleasant, SC."),
    _person(_RATE_CENTRE, "Maria Lopez", "N LAS VEGAS NV", "unavailable", "North Las Vegas, NV."),
    _person(_RATE_CENTRE, "Maria Lopez", "PT ST LUCIE FL", "unavailable", "Port Saint Lucie, FL."),
    _person(_RATE_CENTRE, "Maria Lopez", "PORT ST LUCIE F", "unavailable", "Port Saint Lucie, FL, cut at 15."),
    _person(_RATE_CENTRE, "Maria Lopez", "W PALM BEACH FL", "unavailable", "West Palm Beach, FL."),
    _person(_RATE_CENTRE, "Maria Lopez", "S SAN FRANCISCO", "unavailable", "South San Francisco: the state cut off."),
    _person(_RATE_CENTRE, "Maria Lopez", "E ST LOUIS IL", "unavailable", "East Saint Louis, IL."),
    _person(_RATE_CENTRE, "Maria Lopez", "N CHARLESTON SC", "unavailable", "North Charleston, SC."),
    _person(_RATE_CENTRE, "Maria Lopez", "MT AIRY MD", "unavailable", "Mount Airy, MD: MD is the state here."),
    _person(_RATE_CENTRE, "Maria Lopez", "FT COLLINS CO", "unavailable", "Fort Collins, CO: CO is the state here."),
    _person(_RATE_CENTRE, "Maria Lopez", "PT PLEASANT NJ", "unavailable", "Point Pleasant, NJ."),
    _person(_RATE_CENTRE, "Maria Lopez", "S EL MONTE CA", "unavailable", "South El Monte, CA."),
    _person(_RATE_CENTRE, "Maria Lopez", "N LITTLE ROCK A", "unavailable", "North Little Rock, AR, cut at 15."),
    _person(_RATE_CENTRE, "Maria Lopez", "FT WASHINGTN MD", "unavailable", "Fort Washington, MD, abbreviated."),
    _person(_RATE_CENTRE, "Maria Lopez", "W HARTFORD CT", "unavailable", "West Hartford, CT."),
    _business(_RATE_CENTRE, "Acme Plumbing", "MT VERNON NY", "unavailable", "Mount Vernon, NY."),
    _person(_RATE_CENTRE, "Mary St John", "ST JOHN MARY", "match", "Mary St John: a surname with ST, no place."),
    _person(_RATE_CENTRE, "Louis St Clair", "ST CLAIR LOUIS", "match", "Louis St Clair: a person, not St Clair."),
    _person(_RATE_CENTRE, "Mary A St Clair", "ST CLAIR MARY A", "match", "Mary A. St Clair; the A is her initial."),
    _person(_RATE_CENTRE, "Jean St Germain", "ST GERMAIN JEAN", "match", "Jean St Germain, 15 letters long."),
    _person(_RATE_CENTRE, "Christopher West", "WEST CHRISTOPHE", "match", "Christopher West, cut at 15."),
    _person(_RATE_CENTRE, "Emily Mount", "MOUNT EMILY", "match", "Mount is her surname."),
    _person(_RATE_CENTRE, "Grace Lake", "LAKE GRACE", "match", "Lake is her surname."),
    _person(
        _RATE_CENTRE,
        "Sam Martinez-Lopez",
        "S MARTINEZ-LOPE",
        "ambiguous",
        "An initial and the double surname cut at 15: the surname agrees, the initial cannot say more.",
    ),
    _person(_RATE_CENTRE, "Rosa West", "WEST ROSA", "match", "West is her surname."),
    # ------------------------------------------------------------------ surnames that begin another surname
    _person(_PREFIX, "Maria Garcia", "GARCIANO ANA", "mismatch", "Another surname and another given name."),
    _person(_PREFIX, "Ana Martin", "MARTINEZ JOSE", "mismatch", "Martinez is not Martin; Jose is not Ana."),
    _person(_PREFIX, "Ana Garciano", "GARCIA JOSE", "mismatch", "Garcia is not Garciano; Jose is not Ana."),
    _person(_PREFIX, "Lisa Anders", "ANDERSON MARK", "mismatch", "Anderson is not Anders; Mark is not Lisa."),
    _person(_PREFIX, "Maria Garcia", "GARCIANO MARIA", "partial_match", "Same given name, another surname."),
    _person(_PREFIX, "Maria Garciano", "GARCIA MARIA", "partial_match", "Same given name, another surname."),
    _person(_PREFIX, "John Martin", "MARTINEZ JOHN", "partial_match", "Same given name, another surname."),
    _person(_PREFIX, "Peter Hans", "HANSEN PETER", "partial_match", "Same given name, another surname."),
    _person(_PREFIX, "Carl Johns", "JOHNSON CARL", "partial_match", "Same given name, another surname."),
    _person(_PREFIX, "Mark Stevens", "STEVENSON MARK", "partial_match", "Same given name, another surname."),
    _person(_PREFIX, "Jennifer Christensen", "CHRISTENSEN JEN", "match", "Cut at 15: JEN is the start of Jennifer."),
    _person(_PREFIX, "Alexander Richardson", "RICHARDSON ALEX", "match", "Cut at 15 (or the nickname Alex)."),
    _person(_PREFIX, "Mohammed Abdullahi", "ABDULLAHI MOHAM", "match", "Cut at 15: MOHAM is Mohammed cut off."),
    _person(_PREFIX, "Paul Rodrigues", "RODRIGUEZ PAUL", "match", "Rodrigues and Rodriguez: one name, two spellings."),
    # ------------------------------------------------------------------ romanised names with or without spaces
    _person(_ROMANISED, "Jianguo Wang", "WANG JIAN GUO", "match", "Jianguo written as two syllables."),
    _person(_ROMANISED, "Jian Guo Wang", "WANG JIANGUO", "match", "Jian Guo written as one word."),
    _person(_ROMANISED, "Xiaoming Li", "LI XIAO MING", "match", "Xiaoming written as two syllables."),
    _person(_ROMANISED, "Xiao Ming Li", "LI XIAOMING", "match", "Xiao Ming written as one word."),
    _person(_ROMANISED, "Mei Ling Chen", "CHEN MEILING", "match", "Mei Ling written as one word."),
    _person(_ROMANISED, "Meiling Chen", "CHEN MEI LING", "match", "Meiling written as two syllables."),
    _person(_ROMANISED, "Ji Hoon Kim", "KIM JIHOON", "match", "The Korean given name as one word."),
    _person(_ROMANISED, "Jihoon Kim", "KIM JI HOON", "match", "The Korean given name as two syllables."),
    _person(_ROMANISED, "Seo Yeon Park", "PARK SEOYEON", "match", "The Korean given name as one word."),
    _person(_ROMANISED, "Hyun Woo Lee", "LEE HYUNWOO", "match", "The Korean given name as one word."),
    _person(_ROMANISED, "Mingyu Zhang", "ZHANG MING YU", "match", "Mingyu written as two syllables."),
    _person(
        _ROMANISED, "Thanh Huong Nguyen", "NGUYEN THANHHUO", "match", "Thanh Huong as one word, cut at 15 characters."
    ),
    _person(_ROMANISED, "Jianguo Wang", "WANG JIAN HUA", "partial_match", "Jianhua is another given name: a relative."),
    _person(_ROMANISED, "Xiaoming Li", "LI XIAO HONG", "partial_match", "Xiaohong is another given name: a relative."),
    _person(_ROMANISED, "Mingyu Zhang", "ZHANG MING HUI", "partial_match", "Minghui is another name: a relative."),
]
