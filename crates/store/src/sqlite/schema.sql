-- Context Keeper store, schema version 1.
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);

-- Derived data kept with the store (e.g. an HNSW graph), each stamped by its owner.
CREATE TABLE IF NOT EXISTS aux (name TEXT PRIMARY KEY, data BLOB NOT NULL);

CREATE TABLE documents (
    key      INTEGER PRIMARY KEY AUTOINCREMENT,
    id       TEXT NOT NULL UNIQUE,
    title    TEXT NOT NULL,
    text     TEXT NOT NULL,
    metadata TEXT,
    source   TEXT NOT NULL,
    hash     TEXT NOT NULL
);

-- parent is the parent's ordinal within the same document.
CREATE TABLE chunks (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    doc      INTEGER NOT NULL REFERENCES documents(key) ON DELETE CASCADE,
    ordinal  INTEGER NOT NULL,
    depth    INTEGER NOT NULL,
    parent   INTEGER,
    leaf     INTEGER NOT NULL,
    start    INTEGER NOT NULL,
    end      INTEGER NOT NULL,
    headings TEXT,
    UNIQUE (doc, ordinal)
);

-- Lexical index: per-field statistics, a forward entry per chunk (so a document's postings can
-- be deleted by key) and the postings themselves, clustered by (field, term).
CREATE TABLE lex_fields (field TEXT PRIMARY KEY, chunks INTEGER NOT NULL, total_len INTEGER NOT NULL);
CREATE TABLE lex_docs (
    field TEXT NOT NULL, chunk INTEGER NOT NULL, doc INTEGER NOT NULL, len INTEGER NOT NULL,
    terms TEXT NOT NULL,
    PRIMARY KEY (field, chunk)
) WITHOUT ROWID;
CREATE INDEX lex_docs_doc ON lex_docs (doc);
CREATE TABLE postings (
    field TEXT NOT NULL, term TEXT NOT NULL, chunk INTEGER NOT NULL, doc INTEGER NOT NULL,
    tf INTEGER NOT NULL, len INTEGER NOT NULL,
    PRIMARY KEY (field, term, chunk)
) WITHOUT ROWID;

-- Vectors per named representation, little-endian f32. A rowid table, looked up through the
-- (repr, chunk) index: a WITHOUT ROWID table keeps whole rows in its interior pages, and rows
-- of a kilobyte or more left about three per page, so a lookup descended four times as many
-- pages (measured on reading a quantised search's rescored vectors).
CREATE TABLE vectors (
    repr TEXT NOT NULL, chunk INTEGER NOT NULL, doc INTEGER NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (repr, chunk)
);
CREATE INDEX vectors_doc ON vectors (doc);

CREATE TABLE summaries (
    doc  INTEGER NOT NULL REFERENCES documents(key) ON DELETE CASCADE,
    name TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (doc, name)
);
