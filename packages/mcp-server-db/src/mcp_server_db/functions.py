"""Which functions a read-only query may call: the allowlists the guard judges every call against.

A function runs only if it is known to have no effect outside the statement and not to read outside the
database. Everything else, user-defined functions included, is refused with a message naming it; an operator
who knows better allows it by name (`--allow-function NAME`). Functions that run SQL given as text
(`query_to_xml`, `dblink`, ...) are never allowed: what they run is a string the guard cannot judge.

A call written as a name and parentheses is judged by that name as the engine resolves it (`ALLOWED_NAMES`),
whatever sqlglot makes of it: sqlglot knows names from every dialect (`median`, `initcap`, `array_sum`) and
would type them as pure functions (`exp.Median`) where the engine has no such built-in and resolves the name
to a function someone created. Each list holds only the engine's own built-ins (tests/test_bypass.py checks
them against the live engines). `SAFE_TYPED`, sqlglot's classes of pure functions, judges what has no name
of its own: syntax and operators (`CAST`, `x::int`, `->>`, `CASE`, `EXTRACT(... FROM ...)`).
"""

from __future__ import annotations

__all__ = ["ALLOWED_NAMES", "NEVER", "PG_VOLATILE_READS", "SAFE_TYPED"]

SAFE_TYPED = frozenset(
    [
        "Abs",
        "Acos",
        "Acosh",
        "AddMonths",
        "AnyValue",
        "ApproxDistinct",
        "Array",
        "ArrayAgg",
        "ArrayAll",
        "ArrayAny",
        "ArrayAppend",
        "ArrayCompact",
        "ArrayConcat",
        "ArrayContainedBy",
        "ArrayContains",
        "ArrayContainsAll",
        "ArrayDistinct",
        "ArrayFilter",
        "ArrayFirst",
        "ArrayIntersect",
        "ArrayLast",
        "ArrayOverlaps",
        "ArrayPosition",
        "ArrayPrepend",
        "ArrayRemove",
        "ArrayReverse",
        "ArraySize",
        "ArraySlice",
        "ArraySort",
        "ArraySum",
        "ArrayToString",
        "Ascii",
        "Asin",
        "Asinh",
        "Atan",
        "Atan2",
        "Atanh",
        "Avg",
        "BitLength",
        "BitwiseAndAgg",
        "BitwiseCount",
        "BitwiseOrAgg",
        "BitwiseXorAgg",
        "ByteLength",
        "Case",
        "Cast",
        "Cbrt",
        "Ceil",
        "Chr",
        "Coalesce",
        "Collate",
        "Concat",
        "ConcatWs",
        "Contains",
        "Convert",
        "Corr",
        "Cos",
        "Cosh",
        "Cot",
        "Count",
        "CountIf",
        "CovarPop",
        "CovarSamp",
        "CumeDist",
        "CurrentCatalog",
        "CurrentDatabase",
        "CurrentDate",
        "CurrentDatetime",
        "CurrentRole",
        "CurrentSchema",
        "CurrentSchemas",
        "CurrentTime",
        "CurrentTimestamp",
        "CurrentUser",
        "Date",
        "DateAdd",
        "DateBin",
        "DateDiff",
        "DateFromParts",
        "DateStrToDate",
        "DateSub",
        "DateToDateStr",
        "DateTrunc",
        "Datetime",
        "DatetimeAdd",
        "DatetimeDiff",
        "DatetimeSub",
        "DatetimeTrunc",
        "Day",
        "DayOfMonth",
        "DayOfWeek",
        "DayOfWeekIso",
        "DayOfYear",
        "Dayname",
        "Decode",
        "DecodeCase",
        "Degrees",
        "DenseRank",
        "Elt",
        "Encode",
        "EndsWith",
        "Exists",
        "Exp",
        "Explode",
        "ExplodingGenerateSeries",
        "Extract",
        "Factorial",
        "First",
        "FirstValue",
        "Floor",
        "Format",
        "FromBase",
        "FromBase64",
        "GenerateDateArray",
        "GenerateSeries",
        "GenerateTimestampArray",
        "Greatest",
        "GroupConcat",
        "Grouping",
        "GroupingId",
        "Hex",
        "Hour",
        "If",
        "Initcap",
        "IsInf",
        "IsNan",
        "JSONArray",
        "JSONArrayAgg",
        "JSONArrayContains",
        "JSONBContains",
        "JSONBContainsAllTopKeys",
        "JSONBContainsAnyTopKeys",
        "JSONBContainsTopKey",
        "JSONBExists",
        "JSONBExtract",
        "JSONBExtractScalar",
        "JSONBObjectAgg",
        "JSONBPathExists",
        "JSONCast",
        "JSONExists",
        "JSONExtract",
        "JSONExtractArray",
        "JSONExtractScalar",
        "JSONFormat",
        "JSONKeys",
        "JSONObject",
        "JSONObjectAgg",
        "JSONStripNulls",
        "JSONType",
        "JustifyDays",
        "JustifyHours",
        "JustifyInterval",
        "Lag",
        "Last",
        "LastDay",
        "LastValue",
        "Lead",
        "Least",
        "Left",
        "Length",
        "Levenshtein",
        "Ln",
        "Localtime",
        "Localtimestamp",
        "Log",
        "LogicalAnd",
        "LogicalOr",
        "Lower",
        "LowerHex",
        "MD5",
        "MD5Digest",
        "MakeInterval",
        "Max",
        "Median",
        "Min",
        "Minute",
        "Mode",
        "Month",
        "Monthname",
        "MonthsBetween",
        "Nullif",
        "NthValue",
        "Ntile",
        "Nvl2",
        "Overlay",
        "Pad",
        "ParseJSON",
        "PercentRank",
        "PercentileCont",
        "PercentileDisc",
        "Pi",
        "Posexplode",
        "Pow",
        "Quarter",
        "Radians",
        "Rand",
        "RegexpCount",
        "RegexpExtract",
        "RegexpExtractAll",
        "RegexpFullMatch",
        "RegexpILike",
        "RegexpInstr",
        "RegexpLike",
        "RegexpReplace",
        "RegexpSplit",
        "RegexpSubstr",
        "RegrAvgx",
        "RegrAvgy",
        "RegrCount",
        "RegrIntercept",
        "RegrR2",
        "RegrSlope",
        "RegrSxx",
        "RegrSxy",
        "RegrSyy",
        "Repeat",
        "Replace",
        "Reverse",
        "Right",
        "Round",
        "RowNumber",
        "SHA",
        "SHA1Digest",
        "SHA2",
        "SHA2Digest",
        "SessionUser",
        "Sign",
        "Sin",
        "Sinh",
        "Soundex",
        "Space",
        "Split",
        "SplitPart",
        "Sqrt",
        "StandardHash",
        "StartsWith",
        "Stddev",
        "StddevPop",
        "StddevSamp",
        "StrPosition",
        "StrToDate",
        "StrToTime",
        "StrToUnix",
        "StringToArray",
        "Struct",
        "StructExtract",
        "Stuff",
        "Substring",
        "SubstringIndex",
        "Sum",
        "Tan",
        "Tanh",
        "Time",
        "TimeAdd",
        "TimeDiff",
        "TimeFromParts",
        "TimeStrToDate",
        "TimeStrToTime",
        "TimeStrToUnix",
        "TimeSub",
        "TimeToStr",
        "TimeToTimeStr",
        "TimeToUnix",
        "TimeTrunc",
        "Timestamp",
        "TimestampAdd",
        "TimestampDiff",
        "TimestampFromParts",
        "TimestampSub",
        "TimestampTrunc",
        "ToArray",
        "ToBase64",
        "ToChar",
        "ToDays",
        "ToNumber",
        "Translate",
        "Trim",
        "Trunc",
        "TryCast",
        "TsOrDiToDi",
        "TsOrDsAdd",
        "TsOrDsDiff",
        "TsOrDsToDate",
        "TsOrDsToDateStr",
        "TsOrDsToDatetime",
        "TsOrDsToTime",
        "TsOrDsToTimestamp",
        "Typeof",
        "Unhex",
        "Unicode",
        "UnixDate",
        "UnixToStr",
        "UnixToTime",
        "UnixToTimeStr",
        "Unnest",
        "Upper",
        "UtcDate",
        "UtcTime",
        "UtcTimestamp",
        "Uuid",
        "Variance",
        "VariancePop",
        "Week",
        "WeekOfYear",
        "WidthBucket",
        "Year",
    ]
)
"""sqlglot's classes of pure functions: math, text, dates, aggregates, windows, JSON, arrays, conditionals."""

_COMMON = """
    abs ceil ceiling floor round sqrt power pow exp ln log log10 mod sign pi degrees radians
    sin cos tan asin acos atan atan2 cot greatest least coalesce nullif
    length char_length character_length octet_length bit_length lower upper substr substring trim ltrim rtrim
    lpad rpad replace reverse repeat concat concat_ws left right position ascii chr md5
    count sum avg min max stddev stddev_pop stddev_samp variance var_pop var_samp bit_and bit_or bit_xor
    row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
    """
_POSTGRES = """
    cbrt sinh cosh tanh asinh acosh atanh trunc initcap translate overlay date time timestamp jsonb_exists
    btrim split_part strpos starts_with format quote_ident quote_literal quote_nullable to_hex encode decode
    regexp_replace regexp_match regexp_matches regexp_split_to_array regexp_split_to_table regexp_like
    regexp_count regexp_instr regexp_substr string_to_array string_to_table array_to_string unistr normalize
    sha224 sha256 sha384 sha512 bit_count get_byte get_bit
    now current_date current_time current_timestamp localtime localtimestamp clock_timestamp statement_timestamp
    transaction_timestamp timeofday date_trunc date_part date_bin extract age make_date make_time make_timestamp
    make_timestamptz make_interval justify_days justify_hours justify_interval to_char to_date to_timestamp
    to_number isfinite timezone
    string_agg array_agg json_agg jsonb_agg json_object_agg jsonb_object_agg bool_and bool_or every
    percentile_cont percentile_disc mode corr covar_pop covar_samp regr_avgx regr_avgy regr_count
    regr_intercept regr_r2 regr_slope regr_sxx regr_sxy regr_syy range_agg range_intersect_agg xmlagg
    to_json to_jsonb row_to_json array_to_json json_build_object jsonb_build_object json_build_array
    jsonb_build_array json_object jsonb_object json_array_length jsonb_array_length json_each jsonb_each
    json_each_text jsonb_each_text json_extract_path jsonb_extract_path json_extract_path_text
    jsonb_extract_path_text json_object_keys jsonb_object_keys json_array_elements jsonb_array_elements
    json_array_elements_text jsonb_array_elements_text json_typeof jsonb_typeof json_strip_nulls
    jsonb_strip_nulls jsonb_pretty jsonb_set jsonb_insert jsonb_path_exists jsonb_path_match jsonb_path_query
    jsonb_path_query_array jsonb_path_query_first json_populate_record jsonb_populate_record json_to_record
    jsonb_to_record json_to_recordset jsonb_to_recordset
    array_length array_lower array_upper array_ndims array_dims array_position array_positions array_append
    array_prepend array_cat array_remove array_replace array_fill cardinality unnest generate_series
    generate_subscripts trim_array
    to_tsvector to_tsquery plainto_tsquery phraseto_tsquery websearch_to_tsquery ts_rank ts_rank_cd ts_headline
    setweight strip numnode querytree
    row gen_random_uuid uuid_in width_bucket scale min_scale trim_scale factorial gcd lcm div random
    num_nulls num_nonnulls pg_typeof format_type current_user session_user current_role current_schema
    current_schemas current_database current_catalog user version pg_size_pretty pg_column_size
    pg_relation_size pg_table_size pg_indexes_size pg_total_relation_size pg_database_size
    obj_description col_description shobj_description pg_get_viewdef pg_get_indexdef pg_get_constraintdef
    pg_get_expr pg_get_functiondef pg_get_triggerdef has_table_privilege has_column_privilege
    has_schema_privilege to_regclass to_regtype
    lower_inc upper_inc lower_inf upper_inf isempty range_merge int4range int8range numrange daterange tsrange
    tstzrange
    """
_MYSQL = """
    log2 instr char hex unhex sha1 sha2 soundex median nvl to_char
    ifnull if isnull field find_in_set locate lcase ucase mid left right space strcmp format
    substring_index insert elt export_set make_set oct ord bin conv crc32 sha from_base64 to_base64
    regexp_replace regexp_substr regexp_instr weight_string quote
    now curdate curtime current_date current_time current_timestamp localtime localtimestamp sysdate
    utc_date utc_time utc_timestamp date time timestamp year month day dayofmonth dayofweek dayofyear dayname
    monthname week weekday weekofyear yearweek quarter hour minute second microsecond last_day makedate maketime
    date_add date_sub adddate subdate addtime subtime datediff timediff timestampadd timestampdiff date_format
    time_format str_to_date from_unixtime unix_timestamp to_days from_days to_seconds sec_to_time time_to_sec
    period_add period_diff extract convert_tz get_format
    group_concat json_arrayagg json_objectagg std bit_count
    json_array json_object json_extract json_unquote json_contains json_contains_path json_keys json_length
    json_type json_valid json_search json_value json_quote json_depth json_pretty json_overlaps
    rand uuid database schema user current_user session_user version connection_id found_rows row_count
    truncate greatest least cast convert charset collation coercibility
    """
_SQLITE = """
    log2 cbrt sinh cosh tanh asinh acosh atanh trunc instr char hex unhex
    ifnull iif instr likely unlikely likelihood printf format quote hex unhex unicode char zeroblob randomblob
    random typeof glob like total group_concat string_agg julianday strftime date time datetime unixepoch timediff
    json json_array json_array_length json_extract json_insert json_object json_patch json_remove json_replace
    json_set json_type json_valid json_quote json_group_array json_group_object json_each json_tree
    sqlite_version changes total_changes last_insert_rowid
    """

ALLOWED_NAMES: dict[str, frozenset[str]] = {
    "postgresql": frozenset((_COMMON + _POSTGRES).split()),
    "mysql": frozenset((_COMMON + _MYSQL).split()),
    "mariadb": frozenset((_COMMON + _MYSQL).split()),
    "sqlite": frozenset((_COMMON + _SQLITE).split()),
}
"""Function names, as the engine resolves them (lowercase), that a read-only query may call, per dialect."""

NEVER = frozenset(
    [
        "query_to_xml",
        "query_to_xml_and_xmlschema",
        "query_to_xmlschema",
        "cursor_to_xml",
        "cursor_to_xmlschema",
        "table_to_xml",
        "table_to_xml_and_xmlschema",
        "table_to_xmlschema",
        "schema_to_xml",
        "schema_to_xml_and_xmlschema",
        "schema_to_xmlschema",
        "database_to_xml",
        "database_to_xml_and_xmlschema",
        "database_to_xmlschema",
        "dblink",
        "dblink_exec",
        "dblink_open",
        "dblink_fetch",
        "dblink_send_query",
        "dblink_get_result",
        "dblink_connect",
        "dblink_connect_u",
        "lo_import",
        "lo_export",
        "pg_read_file",
        "pg_read_binary_file",
        "pg_ls_dir",
        "pg_stat_file",
        "pg_file_write",
        "load_file",
        "load_extension",
        "sys_exec",
        "sys_eval",
        # stable, yet each assigns the transaction an id: a write of its own
        "txid_current",
        "pg_current_xact_id",
    ]
)
"""Never allowed, whatever the operator says: they run SQL given as text, or reach files and other servers."""

PG_VOLATILE_READS = frozenset(
    [
        "pg_lock_status",
        "pg_prepared_xact",
        "pg_sequence_last_value",
        "pg_get_backend_memory_contexts",
        "pg_get_shmem_allocations",
        "pg_show_replication_origin_status",
        "pg_stat_get_recovery_prefetch",
        "pg_stat_get_xact_function_calls",
        "pg_stat_get_xact_function_self_time",
        "pg_stat_get_xact_function_total_time",
        "pg_stat_get_xact_numscans",
        "pg_stat_get_xact_tuples_deleted",
        "pg_stat_get_xact_tuples_fetched",
        "pg_stat_get_xact_tuples_hot_updated",
        "pg_stat_get_xact_tuples_inserted",
        "pg_stat_get_xact_tuples_returned",
        "pg_stat_get_xact_tuples_updated",
    ]
)
"""PostgreSQL built-ins marked volatile that only read (their answer can change within a statement), which the
catalog's own views call (pg_locks, pg_prepared_xacts, pg_sequences, pg_stat_xact_*): the plan check allows them
beside the immutable and stable built-ins and the listed names. Those reading files (pg_hba_file_rules) are not."""
