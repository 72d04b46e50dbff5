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
