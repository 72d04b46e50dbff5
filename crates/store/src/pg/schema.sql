-- Context Keeper store on PostgreSQL + pgvector, schema version 1. Everything lives in the
-- schema `ckeep`, so a store shares a database with other applications without clashing.
--
-- The big tables (documents, chunks, lex_docs, postings, vectors, summaries) carry their
-- document's key and never rely on foreign keys, cascades or ON CONFLICT: on a coordinator they
-- may be partitioned by document across servers (docs/postgres.md, scripts/pg_shard.sh), where
-- none of those work. Deletions are explicit in the store's code instead. Every statement is
-- idempotent, so a coordinator whose big tables the recipe made gets the rest from here.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE SCHEMA IF NOT EXISTS ckeep;

CREATE TABLE IF NOT EXISTS ckeep.meta (key text PRIMARY KEY, value text NOT NULL);
-- Derived data kept with the store (e.g. an HNSW graph for the embedded engine), stamped by its owner.
CREATE TABLE IF NOT EXISTS ckeep.aux (name text PRIMARY KEY, data bytea NOT NULL);

-- Keys and chunk ids come from these, in blocks per batch; like SQLite's AUTOINCREMENT they are
-- never reused, which lets readers tell a removed chunk from a live one by id.
CREATE SEQUENCE IF NOT EXISTS ckeep.doc_keys;
CREATE SEQUENCE IF NOT EXISTS ckeep.chunk_ids;

-- text is bytea: stored byte for byte (NUL included), and spans are byte ranges.
CREATE TABLE IF NOT EXISTS ckeep.documents (
    key      bigint NOT NULL PRIMARY KEY,
    id       text NOT NULL,
    title    text NOT NULL,
    text     bytea NOT NULL,
    metadata text,
    source   text NOT NULL,
    hash     text NOT NULL
);

-- parent is the parent's ordinal within the same document.
CREATE TABLE IF NOT EXISTS ckeep.chunks (
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

-- Lexical index, as in the embedded store: per-field statistics, a forward entry per chunk and
-- the postings, clustered by (field, term). BM25 is computed from exactly these numbers.
CREATE TABLE IF NOT EXISTS ckeep.lex_fields (field text PRIMARY KEY, chunks bigint NOT NULL, total_len bigint NOT NULL);
CREATE TABLE IF NOT EXISTS ckeep.lex_docs (
    field text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL, len integer NOT NULL,
    terms text NOT NULL,
    PRIMARY KEY (field, chunk)
);
CREATE INDEX IF NOT EXISTS lex_docs_doc ON ckeep.lex_docs (doc);
CREATE TABLE IF NOT EXISTS ckeep.postings (
    field text NOT NULL, term text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL,
    tf integer NOT NULL, len integer NOT NULL,
    PRIMARY KEY (field, term, chunk)
);

-- Vectors per named representation. The column has no fixed dimension; each representation
-- gets a partial HNSW index on `vec::vector(dim)` when its first vectors are written.
CREATE TABLE IF NOT EXISTS ckeep.vectors (
    repr text NOT NULL, chunk bigint NOT NULL, doc bigint NOT NULL, vec vector NOT NULL,
    PRIMARY KEY (repr, chunk)
);
CREATE INDEX IF NOT EXISTS vectors_doc ON ckeep.vectors (doc);

CREATE TABLE IF NOT EXISTS ckeep.summaries (
    doc  bigint NOT NULL,
    name text NOT NULL,
    text text NOT NULL,
    PRIMARY KEY (doc, name)
);

-- One stored document per id, one chunk per ordinal. A partitioned coordinator cannot hold
-- unique indexes over foreign partitions; each shard has its own, and writers take turns.
DO $$
BEGIN
    IF (SELECT relkind FROM pg_class WHERE oid = 'ckeep.documents'::regclass) = 'r' THEN
        CREATE UNIQUE INDEX IF NOT EXISTS documents_id ON ckeep.documents (id);
        CREATE UNIQUE INDEX IF NOT EXISTS chunks_doc ON ckeep.chunks (doc, ordinal);
    END IF;
END $$;
