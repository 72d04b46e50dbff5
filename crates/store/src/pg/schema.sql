-- Context Keeper store on PostgreSQL + pgvector, schema version 1. Everything lives in the
-- schema `ckeep`, so a store shares a database with other applications without clashing.
--
-- The big tables (documents, chunks, lex_docs, postings, vectors, summaries) carry their
-- document's key and never rely on foreign keys, cascades or ON CONFLICT: on a coordinator they
-- may be partitioned by `doc` across servers (see docs/postgres.md), where none of those work.
-- Deletions are explicit in the store's code instead.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA ckeep;

CREATE TABLE ckeep.meta (key text PRIMARY KEY, value text NOT NULL);
-- Derived data kept with the store (e.g. an HNSW graph for the embedded engine), stamped by its owner.
CREATE TABLE ckeep.aux (name text PRIMARY KEY, data bytea NOT NULL);

-- Keys and chunk ids come from these, in blocks per batch; like SQLite's AUTOINCREMENT they are
-- never reused, which lets readers tell a removed chunk from a live one by id.
CREATE SEQUENCE ckeep.doc_keys;
CREATE SEQUENCE ckeep.chunk_ids;

-- text is bytea: stored byte for byte (NUL included), and spans are byte ranges.
CREATE TABLE ckeep.documents (
    key      bigint NOT NULL PRIMARY KEY,
    id       text NOT NULL,
    title    text NOT NULL,
    text     bytea NOT NULL,
    metadata text,
    source   text NOT NULL,
    hash     text NOT NULL
);
CREATE UNIQUE INDEX documents_id ON ckeep.documents (id);

-- parent is the parent's ordinal within the same document.
CREATE TABLE ckeep.chunks (
    id         bigint NOT NULL PRIMARY KEY,
    doc        bigint NOT NULL,
    ordinal    integer NOT NULL,
    depth      integer NOT NULL,
    parent     integer,
    leaf       boolean NOT NULL,
    start_byte bigint NOT NULL,
    end_byte   bigint NOT NULL,
    headings   text
);
CREATE UNIQUE INDEX chunks_doc ON ckeep.chunks (doc, ordinal);

-- Lexical index, as in the embedded store: per-field statistics, a forward entry per chunk and
-- the postings, clustered by (field, term). BM25 is computed from exactly these numbers.
CREATE TABLE ckeep.lex_fields (field text PRIMARY KEY, chunks bigint NOT NULL, total_len bigint NOT NULL);
CREATE TABLE ckeep.lex_docs (
    field text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL, len integer NOT NULL,
    terms text NOT NULL,
    PRIMARY KEY (field, chunk)
);
CREATE INDEX lex_docs_doc ON ckeep.lex_docs (doc);
CREATE TABLE ckeep.postings (
    field text NOT NULL, term text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL,
    tf integer NOT NULL, len integer NOT NULL,
    PRIMARY KEY (field, term, chunk)
);

-- Vectors per named representation. The column has no fixed dimension; each representation
-- gets a partial HNSW index on `vec::vector(dim)` when its first vectors are written.
CREATE TABLE ckeep.vectors (
    repr text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL, vec vector NOT NULL,
    PRIMARY KEY (repr, chunk)
);
CREATE INDEX vectors_doc ON ckeep.vectors (doc);

CREATE TABLE ckeep.summaries (
    doc  bigint NOT NULL,
    name text NOT NULL,
    text text NOT NULL,
    PRIMARY KEY (doc, name)
);
