"""Defaults. Override in ``instance/config.py`` or with ``ARENA_*`` environment variables
(``ARENA_DATABASE_URL``, ``ARENA_ELO_K=8``, ...; values are parsed as JSON when they can be)."""

CRITERIA = ("preference", "coherence", "alignment")

QUESTIONS = {
    "preference": "Which image do you prefer?",
    "coherence": "Which image is more plausible to exist and has fewer odd or "
    "impossible-looking things?",
    "alignment": "Which image better reflects the caption above them?",
}


class Defaults:
    # Database: None means SQLite (WAL) at <instance>/arena.sqlite3.
    DATABASE_URL = None

    # Where image files live (default <instance>/images).
    IMAGE_DIR = None
    IMAGE_MAX_PIXELS = 40_000_000
    IMAGE_MAX_SIDE = 10_000
    IMAGE_MAX_BYTES = 20 * 1024 * 1024
    MAX_CONTENT_LENGTH = 25 * 1024 * 1024  # one upload request
    IMAGES_PER_PROMPT = 4  # most images one model may have per prompt
    IMAGE_PHONE_SIZE = 384  # longest side of the variant served to voters, px

    # Online Elo (DESIGN.md §2): base 10, scale 400, initial 1000, K=4.
    ELO_K = 4.0
    ELO_BASE = 10.0
    ELO_SCALE = 400.0
    ELO_INITIAL = 1000.0

    # Sessions and matchmaking.
    TASKS_PER_SESSION = 3
    TARGET_VOTES = 26
    VALIDATION_RATE = 0.5  # probability that a session carries one hidden validation task
    TRUST_PENALTY = 0.25  # trust lost on a wrong validation answer (trust starts at 1.0)
    TRUST_REWARD = 0.05
    MAX_RESPONSE_MS = 30 * 60 * 1000

    # Static files are linked with a content hash (templates' ``asset()``), so cache them long.
    SEND_FILE_MAX_AGE_DEFAULT = 31_536_000

    # Security.
    SECRET_KEY = None
    SESSION_COOKIE_HTTPONLY = True
    SESSION_COOKIE_SAMESITE = "Lax"
    SESSION_COOKIE_SECURE = False  # set True behind HTTPS (ARENA_SESSION_COOKIE_SECURE=true)
    PERMANENT_SESSION_LIFETIME = 60 * 60 * 24 * 365
    WTF_CSRF_TIME_LIMIT = None  # tied to the session cookie instead of a clock
    RATELIMIT_STORAGE_URI = "memory://"  # redis://127.0.0.1:6379 when several servers run
    RATELIMIT_HEADERS_ENABLED = True
    RATE_LIMIT_SESSIONS = "60/hour"
    RATE_LIMIT_VOTES = "600/hour"
    RATE_LIMIT_UPLOADS = "5000/hour"

    # HYPE (Zhou et al. 2019); shorten the counts for tests and pilots.
    HYPE_QUALIFICATION_TRIALS = 100
    HYPE_QUALIFICATION_PASS = 0.65  # on reals and on fakes
    HYPE_RETRY_HOURS = 24  # before a failed evaluator may qualify again
    HYPE_INFINITY_TRIALS = 100
    HYPE_TIME_BLOCKS = 3
    HYPE_TIME_BLOCK_TRIALS = 150
    HYPE_STAIRCASE = "weighted"  # or "three-in-a-row" (the paper's words read literally)

    # Demo campaign.
    DEMO_PROMPTS = 24
    DEMO_IMAGES_PER_MODEL = 4
    DEMO_VALIDATION_PAIRS = 4  # per criterion
