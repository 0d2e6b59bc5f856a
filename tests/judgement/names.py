"""Caller-ID/name pairs labelled as a careful reviewer would, one kind of hard case each (issue 14).

Every pair says what a reviewer who knows US caller-ID data would call it and why; `judge` runs the pair through the
same calls as the service (read_caller_id, then match_name), so a placeholder CNAM is judged ``unavailable``. The
first kinds are the name-match misses of issue 14: gendered forms of one name, generational suffixes, business
abbreviations and acronyms, a person's name with a professional suffix on a business line, abbreviated rate centres,
surnames that begin another surname, and romanised names written with or without spaces. Each kind holds near misses
too: the pairs that must not be pulled along (an abbreviation of another word, a real person whose CNAM starts with
ST). CNAM strings are at most 15 characters, as carriers send them.

The later kinds are the misses of issue 33: Spanish and Portuguese diminutives (and a nickname whose full form the CNAM
cut at 15), store numbers in a chain's CNAM, businesses whose names begin FT, MT, PT or ST, a surname particle shared
alone, Arabic ABD names written joined or apart, conflicting middle names, and a given name that is a chain's name.
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
    "diminutive",
    "store_number",
    "place_word_business",
    "particle",
    "arabic_compound",
    "middle_name",
    "business_word_given_name",
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
_DIMINUTIVE = "diminutive"
_STORE = "store_number"
_PLACE_BUSINESS = "place_word_business"
_PARTICLE = "particle"
_ARABIC = "arabic_compound"
_MIDDLE = "middle_name"
_CHAIN_WORD = "business_word_given_name"

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
    # ------------------------------------------------------------------ Spanish and Portuguese diminutives
    _person(_DIMINUTIVE, "Guillermo Soto", "SOTO MEMO", "match", "Memo is the Mexican diminutive of Guillermo."),
    _person(_DIMINUTIVE, "Lalo Medina", "MEDINA EDUARDO", "match", "Lalo is Eduardo; the CNAM has the full name."),
    _person(_DIMINUTIVE, "Quique Navarro", "NAVARRO ENRIQUE", "match", "Quique is Enrique."),
    _person(_DIMINUTIVE, "Toño Reyes", "REYES ANTONIO", "match", "Toño is Antonio, the tilde lost or not."),
    _person(_DIMINUTIVE, "Antonio Reyes", "REYES TONO", "match", "TONO is Toño without its tilde: Antonio."),
    _person(_DIMINUTIVE, "Concepcion Ortiz", "ORTIZ CONCHA", "match", "Concha is Concepción."),
    _person(
        _DIMINUTIVE, "Concha Ibarra", "IBARRA CONCEPCI", "match", "Concepción, cut at 15: the full form of Concha."
    ),
    _person(_DIMINUTIVE, "Jose Morales", "MORALES PEPE", "match", "Pepe is José."),
    _person(_DIMINUTIVE, "Paco Jimenez", "JIMENEZ FRANCIS", "match", "FRANCIS is Francisco cut at 15: Paco."),
    _person(_DIMINUTIVE, "Francisco Luna", "LUNA PANCHO", "match", "Pancho is Francisco."),
    _person(_DIMINUTIVE, "Jesus Salazar", "SALAZAR CHUCHO", "match", "Chucho is Jesús."),
    _person(_DIMINUTIVE, "Chuy Salazar", "SALAZAR JESUS", "match", "Chuy is Jesús."),
    _person(_DIMINUTIVE, "Guadalupe Vargas", "VARGAS LUPE", "match", "Lupe is Guadalupe."),
    _person(_DIMINUTIVE, "Jose Maria Ruiz", "RUIZ CHEMA", "match", "Chema is José María, the double given name."),
    _person(_DIMINUTIVE, "Rosario Campos", "CAMPOS CHARO", "match", "Charo is Rosario."),
    _person(_DIMINUTIVE, "Dolores Pena", "PENA LOLA", "match", "Lola is Dolores (not only Delores)."),
    _person(_DIMINUTIVE, "Antonio Carvalho", "CARVALHO TONHO", "match", "Tonho is the Brazilian Antônio."),
    _person(_DIMINUTIVE, "Beatriz Souza", "SOUZA BIA", "match", "Bia is Beatriz."),
    _person(_DIMINUTIVE, "Memo Castillo", "CASTILLO GUILLE", "match", "Guillermo cut at 15: the full form of Memo."),
    _person(_DIMINUTIVE, "Jim Fitzpatrick", "FITZPATRICK JAM", "match", "JAMES cut at 15: the full form of Jim."),
    _person(_DIMINUTIVE, "Peggy Vanderbilt", "VANDERBILT MARG", "match", "MARGARET cut at 15: Peggy."),
    _person(
        _DIMINUTIVE,
        "Bob Christiansen",
        "CHRISTIANSEN RO",
        "ambiguous",
        "RO may be Robert cut to two letters, or Rose or Ronald: consistent with Bob, no more than an initial.",
    ),
    _person(_DIMINUTIVE, "Pepe Morales", "MORALES FRANCIS", "partial_match", "Pepe is José, not Francisco."),
    _person(_DIMINUTIVE, "Paco Jimenez", "JIMENEZ JOSE", "partial_match", "Paco is Francisco, not José."),
    _person(_DIMINUTIVE, "Lupe Vargas", "VARGAS LUIS", "partial_match", "Lupe is Guadalupe, not Luis."),
    _person(_DIMINUTIVE, "Concha Ortiz", "ORTIZ CONSUELO", "partial_match", "Concha is Concepción; Consuelo is Chelo."),
    _person(_DIMINUTIVE, "Toño Reyes", "REYES ANTONIA", "partial_match", "Toño is Antonio; Antonia is Toña."),
    _person(_DIMINUTIVE, "Jim Fitzpatrick", "FITZPATRICK JOH", "partial_match", "JOH begins John, not James."),
    _person(_DIMINUTIVE, "Memo Soto", "SOTO GUSTAVO", "partial_match", "Memo is Guillermo, not Gustavo."),
    _person(_DIMINUTIVE, "Paco Jimenez", "JIMENEZ PAQUITA", "partial_match", "Paquita is Francisca: a sister or wife."),
    # ------------------------------------------------------------------ store numbers in a chain's CNAM
    _business(_STORE, "Walgreens", "WALGREENS 04521", "match", "Walgreens store 04521: the number is no name."),
    _business(_STORE, "Subway", "SUBWAY 31890", "match", "A Subway branch and its store number."),
    _business(_STORE, "Starbucks Coffee", "STARBUCKS 1123", "match", "The brand's first word and a store number."),
    _business(_STORE, "Starbucks Coffee Company", "STARBUCKS 1123", "match", "The same, with a legal form."),
    _business(_STORE, "Chipotle Mexican Grill", "CHIPOTLE 2291", "match", "The brand's first word and a store."),
    _business(_STORE, "CVS Pharmacy", "CVS PHARMACY 00", "match", "CVS store 00..., its number cut at 15."),
    _business(_STORE, "Dollar General", "DOLLAR GEN 1234", "match", "GEN abbreviates General; then a store."),
    _business(_STORE, "7-Eleven", "7-ELEVEN 34567", "match", "The name holds a digit; the store number does not."),
    _business(_STORE, "Studio 54", "STUDIO 54", "match", "The number is the supplied name's own: no store."),
    _business(_STORE, "Walgreens", "WALMART 04521", "mismatch", "Another chain's store."),
    _business(_STORE, "Starbucks Coffee", "DUNKIN 1123", "mismatch", "Another coffee chain's store."),
    _business(_STORE, "Panera Bread", "SUBWAY 31890", "mismatch", "Another chain's store."),
    _business(_STORE, "Coffee Bean", "STARBUCKS 1123", "mismatch", "Starbucks is not the Coffee Bean."),
    _business(_STORE, "Home Depot", "HOME GOODS 0452", "mismatch", "HomeGoods is not Home Depot."),
    # ------------------------------------------------------------------ businesses that begin FT, MT, PT, ST
    _business(_PLACE_BUSINESS, "Fort Myers Dental", "FT MYERS DENTAL", "match", "A dental practice, not a city."),
    _business(_PLACE_BUSINESS, "St. Luke's Clinic", "ST LUKES CLINIC", "match", "A clinic named after a saint."),
    _business(_PLACE_BUSINESS, "Saint Lukes Clinic", "ST LUKES CLINIC", "match", "ST is Saint."),
    _business(_PLACE_BUSINESS, "Mount Sinai Hospital", "MT SINAI HOSPIT", "match", "MT is Mount; HOSPIT cut."),
    _business(_PLACE_BUSINESS, "Point Loma Dental", "PT LOMA DENTAL", "match", "PT is Point here."),
    _business(_PLACE_BUSINESS, "St Joseph Church", "ST JOSEPH CHURC", "match", "A church, cut at 15."),
    _business(_PLACE_BUSINESS, "Fort Wayne Pizza", "FT WAYNE PIZZA", "match", "A pizzeria named after its town."),
    _business(_PLACE_BUSINESS, "Mount Vernon Auto", "MT VERNON AUTO", "match", "A garage named after its town."),
    _business(_PLACE_BUSINESS, "Fort Myers Dental", "FT MYERS DELI", "partial_match", "Another business of the town."),
    _business(_PLACE_BUSINESS, "Saint Lukes Clinic", "ST MARYS CLINIC", "mismatch", "Another saint's clinic."),
    _business(_PLACE_BUSINESS, "Acme Plumbing", "FT MYERS FL", "unavailable", "Fort Myers, FL: a rate centre."),
    _business(_PLACE_BUSINESS, "Acme Plumbing", "FT WALTON BEACH", "unavailable", "Fort Walton Beach, state cut."),
    _business(_PLACE_BUSINESS, "Acme Plumbing", "ST CLOUD MN", "unavailable", "Saint Cloud, MN: a rate centre."),
    _business(_PLACE_BUSINESS, "Acme Plumbing", "PT ARTHUR TX", "unavailable", "Port Arthur, TX: a rate centre."),
    # ------------------------------------------------------------------ a particle alone is no surname
    _person(_PARTICLE, "Juan del Rio", "DEL CASTILLO PE", "mismatch", "DEL is all they share: Castillo, not Rio."),
    _person(_PARTICLE, "Maria de la Cruz", "DE LA ROSA ANA", "mismatch", "DE LA is all they share: Rosa, Ana."),
    _person(_PARTICLE, "Pieter van Dijk", "VAN DER BERG PI", "mismatch", "VAN and a P: another surname."),
    _person(_PARTICLE, "Omar al Hashimi", "AL MASRI OMAR", "partial_match", "Omar, but al-Masri is not al-Hashimi."),
    _person(_PARTICLE, "Hans von Trapp", "VON BRAUN HANS", "partial_match", "Hans, but von Braun, not von Trapp."),
    _person(_PARTICLE, "Khalid bin Zayed", "BIN SAUD KHALID", "partial_match", "Khalid, but bin Saud, not Zayed."),
    _person(_PARTICLE, "Paulo da Silva", "DA COSTA PAULO", "partial_match", "Paulo, but da Costa, not da Silva."),
    _person(_PARTICLE, "Juan del Rio", "DEL RIO JUAN", "match", "The whole particle surname."),
    _person(_PARTICLE, "Juan del Rio", "RIO JUAN", "match", "The surname without its particle."),
    _person(_PARTICLE, "Maria de la Cruz", "DE LA CRUZ MARI", "match", "Maria cut at 15."),
    _person(_PARTICLE, "Pieter van Dijk", "VAN DIJK PIETER", "match", "The whole particle surname."),
    _person(_PARTICLE, "Omar al Hashimi", "AL HASHIMI OMAR", "match", "The whole surname with its article."),
    _person(_PARTICLE, "Ana de Souza", "DE SOUZA LUCIA", "partial_match", "De Souza shared: another given name."),
    # ------------------------------------------------------------------ Arabic ABD names joined or apart
    _person(_ARABIC, "Abdulrahman Khan", "KHAN ABD AL RAH", "match", "Abd al-Rahman apart, cut at 15."),
    _person(_ARABIC, "Abd al Rahman Khan", "KHAN ABDULRAHMA", "match", "Abdulrahman joined, cut at 15."),
    _person(_ARABIC, "Abdel Rahman Hassan", "HASSAN ABDULRAH", "match", "Abdel Rahman is Abdulrahman."),
    _person(_ARABIC, "Abdurrahman Ali", "ALI ABDELRAHMAN", "match", "Abdurrahman: the article assimilated."),
    _person(_ARABIC, "Abdulaziz Saleh", "SALEH ABDEL AZI", "match", "Abdel Aziz apart, cut at 15."),
    _person(_ARABIC, "Abdul Aziz Saleh", "SALEH ABDULAZIZ", "match", "Abdul Aziz joined."),
    _person(_ARABIC, "Abdullah Omar", "OMAR ABDALLAH", "match", "Abdallah and Abdullah: one name."),
    _person(_ARABIC, "Abd Allah Omar", "OMAR ABDULLAH", "match", "Abd Allah written joined."),
    _person(_ARABIC, "Abdel Karim Nasser", "NASSER ABDULKAR", "match", "Abdulkarim cut at 15."),
    _person(_ARABIC, "Mohamed Abdelrahman", "ABDUL RAHMAN MO", "match", "The surname apart, Mohamed cut."),
    _person(_ARABIC, "Abdulrahman Khan", "KHAN ABDULKARIM", "partial_match", "Abdulkarim is another name."),
    _person(_ARABIC, "Abdullah Omar", "OMAR ABDUL AZIZ", "partial_match", "Abdul Aziz is another name."),
    _person(_ARABIC, "Abdul Smith", "SMITH ABDUL", "match", "Abdul alone as a given name: the same."),
    _person(_ARABIC, "Abdelrahman Khan", "KHAN RAHMAN", "partial_match", "Rahman alone is another name."),
    # ------------------------------------------------------------------ conflicting middle names
    _person(_MIDDLE, "Mary Ann Fox", "FOX MARY LOUISE", "partial_match", "Mary Ann, Mary Louise: two women."),
    _person(_MIDDLE, "John Paul Stone", "STONE JOHN PETE", "partial_match", "John Paul, John Peter: two men."),
    _person(_MIDDLE, "Mary A Fox", "FOX MARY LOUISE", "partial_match", "Middle initial A against Louise."),
    _person(_MIDDLE, "James Robert Lee", "LEE JAMES", "match", "No middle name on file: nothing contradicts."),
    _person(_MIDDLE, "Mary Ann Fox", "FOX MARY ANN", "match", "The same middle name."),
    _person(_MIDDLE, "Mary Ann Fox", "FOX MARY A", "match", "The middle initial agrees."),
    _person(_MIDDLE, "Mary L Fox", "FOX MARY LOUISE", "match", "The supplied initial agrees with Louise."),
    _person(_MIDDLE, "Mary Fox", "FOX MARY LOUISE", "match", "No middle name supplied: nothing contradicts."),
    _person(_MIDDLE, "Mary Elizabeth Fox", "FOX MARY BETH", "match", "Beth is Elizabeth."),
    _person(_MIDDLE, "James Robert Lee", "LEE JAMES BOB", "match", "Bob is Robert."),
    _person(_MIDDLE, "Sarah Jane Miller", "MILLER SARAH KA", "partial_match", "KA is no Jane: another middle name."),
    _person(_MIDDLE, "Maria Elena Garcia", "GARCIA CRUZ MAR", "match", "Cruz is her second surname, not a middle."),
    # ------------------------------------------------------------------ a given name that is a chain's name
    _person(_CHAIN_WORD, "Denny Ross", "DENNYS 3321", "mismatch", "A Denny's restaurant, not Denny Ross."),
    _person(_CHAIN_WORD, "Wendy Clark", "WENDYS 0457", "mismatch", "A Wendy's restaurant, not Wendy Clark."),
    _person(_CHAIN_WORD, "Ross Denny", "ROSS 0452", "mismatch", "A Ross store, not a man named Ross."),
    _person(_CHAIN_WORD, "Jimmy John", "JIMMY JOHNS 012", "mismatch", "A Jimmy John's branch."),
    _person(_CHAIN_WORD, "Arby Wells", "ARBYS 7781", "mismatch", "An Arby's restaurant."),
    _person(
        _CHAIN_WORD,
        "Denny Ross",
        "DENNYS 3321",
        "ambiguous",
        "The provider calls the line a business: perhaps his work phone, but the name is the chain's.",
        caller_type="BUSINESS",
    ),
    _person(_CHAIN_WORD, "Wendy Clark", "CLARK WENDY", "match", "Her own name, no chain."),
    _person(_CHAIN_WORD, "Chris Dennys", "DENNYS CHRIS", "match", "Dennys is his surname."),
    _person(_CHAIN_WORD, "Marshall Green", "MARSHALLS 0834", "mismatch", "A Marshalls store, not Marshall Green."),
    _person(_CHAIN_WORD, "Carl Jones", "CARLS JR 1187", "mismatch", "A Carl's Jr. restaurant, not Carl Jones."),
    _person(_CHAIN_WORD, "Harvey Stone", "HARVEYS 0213", "mismatch", "A Harvey's restaurant, not Harvey Stone."),
    _person(_CHAIN_WORD, "Dillard Smith", "DILLARDS 0219", "mismatch", "A Dillard's store, not Dillard Smith."),
    _person(
        _CHAIN_WORD,
        "Albert Moore",
        "ALBERTSONS 4410",
        "mismatch",
        "An Albertsons supermarket: its name begins with his given name, and is not his.",
    ),
    _person(_CHAIN_WORD, "Marshall Green", "GREEN MARSHALL", "match", "His own name, no chain."),
]
