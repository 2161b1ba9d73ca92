CREATE FUNCTION kioku_vector_columns(p_embedding halfvec, p_embedder text,
    OUT embedding halfvec, OUT needs_embedding boolean, OUT embedded_with text)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_embedder IS NULL THEN
        -- A process of an earlier release does not say which model made its vector: kept
        -- unlabelled, so the next `kioku reembed` embeds it again.
        embedding := p_embedding;
    ELSIF p_embedding IS NOT NULL THEN
        -- Read under a share lock: a re-embed's switch rewrites this row in the transaction
        -- that queues every memory, so a write either commits before that queueing sees it
        -- or waits here and finds the new model.
        PERFORM FROM kioku_meta m
        WHERE m.key = 'embedding_model' AND m.value = p_embedder
          AND vector_dims(p_embedding) = (SELECT d.value::integer FROM kioku_meta d
                                          WHERE d.key = 'embedding_dimension')
        FOR SHARE OF m;
        IF FOUND THEN
            embedding := p_embedding;
            embedded_with := p_embedder;
        END IF;
    END IF;
    needs_embedding := embedding IS NULL;
END $$;
