"""Given-name diminutives the `nicknames` package lacks: Spanish and Portuguese hypocorisms, each with its source.

The `nicknames` package (the matcher's main nickname data) is built from English-language genealogy lists: it has
Bob for Robert but not Pepe for José or Memo for Guillermo, and it files Lola under Delores only. The pairs below fill
that gap. Each block names where its pairs were read; only pairs those sources list are kept, and a diminutive the
sources give for several names (Beto: Alberto, Roberto) is kept for each. A full form written as two words ("jose
maria") is a double given name, matched as the two words joined ("Chema" for José María). Accents are written as the
sources write them; the matcher folds them away (Toño, Tono and TONO are one word).

Nothing here is read at run time from anywhere else: the table is part of the package.
"""

from __future__ import annotations

__all__ = ["DIMINUTIVES", "SOURCES"]

SOURCES: dict[str, str] = {
    "mx": "Mexican hypocorisms: 'Mexican Nicknames or Los Nombres Hipocorísticos', chimatli.org/blog/?m=201003",
    "es": "Spanish hypocorisms (Spain): the lists at kuaest.enl.plus/?p=12749 and spanishviaskype.com/es/paco-pepe/, "
    "and the genealogists' list at yubrain.com/en/history-and-culture/match-nicknames-with-names/ (after the RAE)",
    "pt": "Portuguese hypocorisms: en.wikipedia.org/wiki/Portuguese_name, section 'Diminutive'",
}

# source -> "diminutive diminutive: full form | ..." entries.
DIMINUTIVES: dict[str, str] = {
    "mx": """
        fito: adolfo | beto: alberto | beto: roberto | poncho: alfonso | toño: antonio | toña: antonia
        lalo: eduardo | quique: enrique | nando: fernando | lencho: lorenzo | lencho: florencio
        paco pancho: francisco | paquita pancha: francisca | chalo: gonzalo | goyo: gregorio
        lupe lupita: guadalupe | memo: guillermo | nacho: ignacio | chencho: inocencio | chuy chucho chus: jesús
        pepe chepe: josé | pepa: josefa | chema: josé maría | juanma: juan manuel | lucho: luis
        manolo lolo: manuel | rafa: rafael | moncho: ramón | chava: salvador | chago: santiago | checo: sergio
        chente: vicente | licha: alicia | concha conchita: concepción | chelo: consuelo | lola: dolores
        chela: graciela | chavela: isabel | marisa: maría luisa | marisol: maría soledad | maribel: maría isabel
        malena: maría elena
        """,
    "es": """
        charo chayo: rosario | maite: maría teresa | conchi: concepción | pili: pilar | merche meche: mercedes
        quico curro: francisco | goyo: gregorio | juanjo: juan josé | juanma: juan manuel | luismi: luis miguel
        """,
    "pt": """
        tonho toninho tonico: antônio | guto: augusto | bia: beatriz | zezé: josé | beto: alberto | beto: roberto
        manel: manuel | leco: leonardo | cacá: carlos | xande: alexandre
        """,
}
