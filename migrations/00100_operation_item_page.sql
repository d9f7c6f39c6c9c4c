-- +goose Up
-- The seqs of one page of an operation's items (issue 18, speed): an
-- ordered walk of the index that serves the filter (index-only where the
-- visibility map allows), whatever the statistics say. Right after a bulk
-- add the planner has none for a new operation (it estimates a few rows)
-- and sorted all its items by a bitmap scan instead (hundreds of
-- milliseconds at 100,000 items); the settings below leave it the index
-- order only. The list joins its expansions to these rows alone.
-- p_status NULL: any status; p_rated NULL: with or without a rate.
-- +goose StatementBegin
CREATE FUNCTION operation_item_page(p_op uuid, p_status text, p_rated boolean, p_limit integer, p_offset integer)
RETURNS TABLE (seq bigint) LANGUAGE sql STABLE ROWS 100
SET enable_sort = off SET enable_bitmapscan = off SET enable_seqscan = off
AS $$
    (SELECT i.seq FROM operation_items i
      WHERE p_status IS NULL AND p_rated IS NULL AND i.operation_id = p_op
      ORDER BY i.seq LIMIT p_limit OFFSET p_offset)
    UNION ALL
    (SELECT i.seq FROM operation_items i
      WHERE p_status IS NOT NULL AND p_rated IS NULL AND i.operation_id = p_op AND i.status = p_status
      ORDER BY i.seq LIMIT p_limit OFFSET p_offset)
    UNION ALL
    (SELECT i.seq FROM operation_items i
      WHERE p_status IS NULL AND p_rated AND i.operation_id = p_op AND i.rate_snapshot_id IS NOT NULL
      ORDER BY i.seq LIMIT p_limit OFFSET p_offset)
    UNION ALL
    (SELECT i.seq FROM operation_items i
      WHERE p_status IS NULL AND NOT p_rated AND i.operation_id = p_op AND i.rate_snapshot_id IS NULL
      ORDER BY i.seq LIMIT p_limit OFFSET p_offset)
    UNION ALL
    (SELECT i.seq FROM operation_items i
      WHERE p_status IS NOT NULL AND p_rated IS NOT NULL AND i.operation_id = p_op AND i.status = p_status
        AND (i.rate_snapshot_id IS NOT NULL) = p_rated
      ORDER BY i.seq LIMIT p_limit OFFSET p_offset)
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION operation_item_page(uuid, text, boolean, integer, integer);
