"""Word lists the offline rules rely on: job titles, relations, pets, words that are no names.

"I'm a teacher" states a job but "I'm a fan of jazz" does not: after "I'm a" / "je suis", only
a known job title makes a role. Lists are lowercase; the rules match them case-insensitively.
"""

from __future__ import annotations

from memoryhub import text_patterns


def alternatives(words: frozenset[str]) -> str:
    """A regex alternation of the words, longest first (so "co-founder" beats "founder")."""
    return "|".join(text_patterns.escape(word) for word in sorted(words, key=len, reverse=True))


# fmt: off
EN_JOB_TITLES = frozenset((
    "accountant", "actor", "actuary", "administrator", "adviser", "advisor", "agent", "analyst",
    "architect", "artist", "assistant", "associate", "attorney", "auditor", "baker", "banker",
    "barista", "barrister", "biologist", "bookkeeper", "broker", "builder", "butcher", "buyer",
    "carpenter", "cashier", "ceo", "cfo", "chef", "chemist", "cleaner", "clerk", "coach",
    "co-founder", "cofounder", "consultant", "cook", "coordinator", "coo", "copywriter",
    "counsellor", "counselor", "cto", "dentist", "designer", "developer", "dietitian", "director",
    "doctor", "driver", "economist", "editor", "electrician", "engineer", "entrepreneur",
    "farmer", "firefighter", "founder", "freelancer", "gardener", "geologist", "hairdresser",
    "illustrator", "instructor", "intern", "journalist", "judge", "lawyer", "lecturer",
    "librarian", "manager", "marketer", "mathematician", "mechanic", "midwife", "musician",
    "nanny", "nurse", "officer", "optician", "paralegal", "paramedic", "pharmacist",
    "photographer", "physician", "physicist", "physiotherapist", "pilot", "plumber",
    "policeman", "policewoman", "president", "producer", "professor", "programmer",
    "psychiatrist", "psychologist", "receptionist", "recruiter", "researcher", "salesperson",
    "scientist", "secretary", "solicitor", "specialist", "statistician", "strategist",
    "student", "surgeon", "teacher", "technician", "therapist", "trainer", "translator", "tutor",
    "vet", "veterinarian", "vp", "waiter", "waitress", "writer",
))
# "head of sales", "chief of staff": a title made of a word and its field.
EN_TITLE_HEADS = frozenset(("head", "chief", "vp", "director", "manager"))
FR_JOB_TITLES = frozenset((
    "agricultrice", "agriculteur", "aide-soignant", "aide-soignante", "analyste", "architecte",
    "artisan", "assistant", "assistante", "avocat", "avocate", "banquier", "banquière",
    "boulanger", "boulangère", "caissier", "caissière", "chauffeur", "chef", "cheffe",
    "chercheur", "chercheuse", "chirurgien", "chirurgienne", "coiffeur", "coiffeuse",
    "commercial", "commerciale", "comptable", "consultant", "consultante", "cuisinier",
    "cuisinière", "dentiste", "designer", "développeur", "développeuse", "directeur",
    "directrice", "drh", "éducateur", "éducatrice", "électricien", "électricienne",
    "enseignant", "enseignante", "étudiant", "étudiante", "fondateur", "fondatrice", "gérant",
    "gérante", "graphiste", "infirmier", "infirmière", "ingénieur", "ingénieure",
    "institutrice", "instituteur", "journaliste", "juriste", "kiné", "kinésithérapeute",
    "maçon", "mécanicien", "mécanicienne", "médecin", "menuisier", "notaire", "pdg",
    "pharmacien", "pharmacienne", "photographe", "pilote", "plombier", "policier", "policière",
    "pompier", "professeur", "professeure", "prof", "psychologue", "responsable",
    "sage-femme", "secrétaire", "serveur", "serveuse", "stagiaire", "technicien",
    "technicienne", "traducteur", "traductrice", "vendeur", "vendeuse", "vétérinaire",
))

# Relations whose name is a fact about the user, with the slot of the ones a user has one of.
EN_RELATIONS = {
    "manager": "manager", "boss": "manager", "line manager": "manager", "wife": "partner",
    "husband": "partner", "partner": "partner", "girlfriend": "partner", "boyfriend": "partner",
    "fiancé": "partner", "fiancée": "partner", "fiance": "partner", "fiancee": "partner",
    "spouse": "partner", "mother": "mother", "mom": "mother", "mum": "mother",
    "father": "father", "dad": "father", "sister": None, "brother": None, "son": None,
    "daughter": None, "kid": None, "child": None, "grandmother": None, "grandfather": None,
    "grandma": None, "grandpa": None, "aunt": None, "uncle": None, "cousin": None, "niece": None,
    "nephew": None, "best friend": None, "assistant": "assistant", "dog": None, "cat": None,
    "co-founder": None, "cofounder": None, "landlord": "landlord", "team lead": "manager",
}
FR_RELATIONS = {
    "responsable": "manager", "chef": "manager", "cheffe": "manager", "manager": "manager",
    "patron": "manager", "patronne": "manager", "n+1": "manager", "femme": "partner",
    "épouse": "partner", "mari": "partner", "époux": "partner", "conjoint": "partner",
    "conjointe": "partner", "compagnon": "partner", "compagne": "partner", "copain": "partner",
    "copine": "partner", "mère": "mother", "maman": "mother", "père": "father",
    "papa": "father", "sœur": None, "soeur": None, "frère": None, "fils": None, "fille": None,
    "grand-mère": None, "grand-père": None, "tante": None, "oncle": None, "cousin": None,
    "cousine": None, "neveu": None, "nièce": None, "meilleur ami": None, "meilleure amie": None,
    "assistant": "assistant", "assistante": "assistant", "chien": None, "chienne": None,
    "chat": None, "chatte": None, "propriétaire": "landlord",
}
EN_PETS = frozenset((
    "dog", "cat", "puppy", "kitten", "rabbit", "bunny", "hamster", "guinea pig", "parrot",
    "horse", "tortoise", "turtle", "retriever", "labrador", "spaniel", "terrier", "poodle",
    "beagle", "collie", "dachshund", "pug", "husky", "bulldog", "shepherd",
))
FR_PETS = frozenset((
    "chien", "chienne", "chat", "chatte", "chiot", "chaton", "lapin", "hamster", "perroquet",
    "cheval", "jument", "tortue", "labrador", "caniche", "teckel", "berger",
))

# Capitalised words after "I'm" / "my manager is" that are no one's name.
NOT_NAMES = frozenset((
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "lundi", "mardi",
    "mercredi", "jeudi", "vendredi", "samedi", "dimanche", "january", "february", "march", "april",
    "june", "july", "august", "september", "october", "november", "december", "janvier", "février",
    "avril", "juin", "juillet", "août", "septembre", "octobre", "novembre", "décembre", "today",
    "tomorrow", "tonight", "back", "later", "please", "when", "if", "maybe", "demain", "ce", "plus",
    "here", "ready", "good", "fine", "okay", "ok", "sorry", "new", "done", "sure", "not", "so",
    "just", "also", "still", "really", "very", "in", "on", "at", "off", "out", "away", "home",
    "french", "english", "british", "american", "canadian", "german", "spanish", "italian",
    "irish", "scottish", "welsh", "dutch", "swiss", "belgian", "polish", "portuguese",
    "brazilian", "mexican", "indian", "chinese", "japanese", "korean", "australian", "estonian",
    "swedish", "norwegian", "danish", "finnish", "greek", "turkish", "russian", "ukrainian",
    "european", "asian", "african", "jewish", "muslim", "christian", "catholic", "hindu",
    "buddhist", "vegan", "vegetarian", "gay", "trans", "the", "a", "an", "it", "that", "this",
    "i'd", "i’d", "i'm", "i’m", "i'll", "i’ll", "i've", "i’ve",
))
# fmt: on
