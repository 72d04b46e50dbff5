-- Which chunks' vectors changed at which generation, so a reader holding a store's vectors
-- applies the changes since its generation instead of reading them all again. Triggers keep it
-- whatever the write path; `vector_log_since` is the oldest generation it still covers.
CREATE TABLE IF NOT EXISTS vector_log (
    generation INTEGER NOT NULL, repr TEXT NOT NULL, chunk INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS vector_log_generation ON vector_log (generation);
CREATE TRIGGER IF NOT EXISTS vector_log_insert AFTER INSERT ON vectors BEGIN
    INSERT INTO vector_log (generation, repr, chunk) VALUES (
        COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'), 0),
        NEW.repr, NEW.chunk);
END;
CREATE TRIGGER IF NOT EXISTS vector_log_delete AFTER DELETE ON vectors BEGIN
    INSERT INTO vector_log (generation, repr, chunk) VALUES (
        COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'), 0),
        OLD.repr, OLD.chunk);
END;
INSERT OR IGNORE INTO meta (key, value)
    SELECT 'vector_log_since', COALESCE((SELECT value FROM meta WHERE key = 'generation'), '0');
-- The vectors removed from a representation whose HNSW segments the store keeps (a segment
-- list in `aux`), with the generation they went at: a saved segment still walks through a
-- removed row, so a process that opens the store after a write and before the next save
-- finds the vector the row was built with, and walks as the writer's process did. A save
-- forgets those it wrote itself; the vector log's window bounds the rest.
CREATE TABLE IF NOT EXISTS vector_gone (
    generation INTEGER NOT NULL, repr TEXT NOT NULL, chunk INTEGER NOT NULL,
    doc INTEGER NOT NULL, vec BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS vector_gone_generation ON vector_gone (generation);
CREATE TRIGGER IF NOT EXISTS vector_gone_delete AFTER DELETE ON vectors
WHEN EXISTS (SELECT 1 FROM aux WHERE name = 'hnsw:' || OLD.repr || '#segments') BEGIN
    INSERT INTO vector_gone (generation, repr, chunk, doc, vec) VALUES (
        COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'generation'), 0),
        OLD.repr, OLD.chunk, OLD.doc, OLD.vec);
END;
