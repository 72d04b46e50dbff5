//! The filter's semantics and its compact form.

use serde_json::json;

use crate::MetadataFilter;

fn f(value: serde_json::Value) -> MetadataFilter {
    serde_json::from_value(value).unwrap()
}

#[test]
fn every_operator_on_numbers_strings_dates_and_lists() {
    let doc = json!({"year": 2021, "lang": "zh", "tags": ["rust", "检索"], "source": "docs/guides/a.md",
                     "date": "2024-05-01T10:00:00+02:00", "title": "長江の流れ"});
    let pass = |v| f(v).matches(&doc);
    assert!(pass(json!({"year": 2021})));
    assert!(pass(json!({"tags": "rust"})), "a list holding the value");
    assert!(pass(json!({"lang": ["ja", "zh"]})), "any of");
    assert!(pass(json!({"year": {"$gte": 2021, "$lt": 2022}})));
    assert!(!pass(json!({"year": {"$gt": 2021}})));
    assert!(pass(json!({"year": {"$ne": 2020}})));
    assert!(pass(json!({"missing": {"$ne": 1}})), "a document without the key passes $ne");
    assert!(!pass(json!({"missing": {"$eq": 1}})));
    assert!(pass(json!({"lang": {"$in": ["zh", "ja"]}})));
    assert!(pass(json!({"lang": {"$nin": ["en"]}})));
    assert!(pass(json!({"tags": {"$in": ["检索"]}})), "any element of a list");
    assert!(pass(json!({"source": {"$prefix": "docs/"}})));
    assert!(!pass(json!({"source": {"$prefix": "src/"}})));
    assert!(pass(json!({"title": {"$prefix": "長江"}})), "a Chinese or Japanese prefix");
    assert!(pass(json!({"title": {"$contains": "の流"}})));
    assert!(pass(json!({"tags": {"$contains": "rust"}})));
    assert!(pass(json!({"year": {"$exists": true}, "missing": {"$exists": false}})));
    // Dates compare as instants, whatever their offset or precision.
    assert!(pass(json!({"date": {"$gt": "2024-05-01T07:59:59Z"}})));
    assert!(!pass(json!({"date": {"$gt": "2024-05-01T08:00:00Z"}})));
    assert!(pass(json!({"date": {"$gte": "2024-05-01", "$lt": "2024-05-02"}})));
    // Types that do not compare never pass a comparison.
    assert!(!pass(json!({"lang": {"$gt": 3}})));
    // Logic.
    assert!(pass(json!({"$or": [{"lang": "en"}, {"year": {"$lte": 2021}}]})));
    assert!(!pass(json!({"$and": [{"lang": "zh"}, {"year": 2020}]})));
    assert!(pass(json!({"$not": {"lang": "en"}})));
    assert!(f(json!({})).matches(&doc) && f(json!({})).is_empty());
    assert!(!f(json!({"year": 2021})).matches(&json!(null)));
}

#[test]
fn a_bad_filter_is_refused_with_its_place() {
    let err =
        |v: serde_json::Value| serde_json::from_value::<MetadataFilter>(v).unwrap_err().to_string();
    assert!(err(json!({"year": {"$gtee": 1}})).contains("`filter.year.$gtee`: unknown operator"));
    assert!(
        err(json!({"$or": [{"a": 1}, {"b": {"$in": 3}}]}))
            .contains("`filter.$or[1].b.$in` must be a list")
    );
    assert!(err(json!({"$nor": []})).contains("`filter.$nor`"));
    assert!(err(json!({"$and": {"a": 1}})).contains("must be a list of filters"));
    assert!(err(json!({"d": {"$lt": true}})).contains("a number, or a string"));
}

#[test]
fn the_compact_form_reads_into_the_json_form() {
    let parse = |s: &str| serde_json::to_value(MetadataFilter::parse(s).unwrap()).unwrap();
    assert_eq!(parse("year=2020"), json!({"year": 2020}));
    assert_eq!(parse("title=Owl facts"), json!({"title": "Owl facts"}), "text with spaces");
    assert_eq!(parse(r#"tags=["a","b"]"#), json!({"tags": ["a", "b"]}));
    assert_eq!(
        parse("year>=2020 and (lang=zh or lang=ja) and not draft=true"),
        json!({"$and": [{"year": {"$gte": 2020}}, {"$or": [{"lang": "zh"}, {"lang": "ja"}]},
                        {"$not": {"draft": true}}]})
    );
    assert_eq!(
        parse("a=1 or b=2 and c=3"),
        json!({"$or": [{"a": 1}, {"$and": [{"b": 2}, {"c": 3}]}]})
    );
    assert_eq!(parse("source^=docs/guides"), json!({"source": {"$prefix": "docs/guides"}}));
    assert_eq!(parse("来源^=文档/指南"), json!({"来源": {"$prefix": "文档/指南"}}));
    assert_eq!(parse("tags~rust"), json!({"tags": {"$contains": "rust"}}));
    assert_eq!(parse("lang in [zh, ja]"), json!({"lang": {"$in": ["zh", "ja"]}}));
    assert_eq!(parse("year NOT IN [2020, 2021]"), json!({"year": {"$nin": [2020, 2021]}}));
    assert_eq!(parse("author exists"), json!({"author": {"$exists": true}}));
    assert_eq!(parse("date<\"2024-01-01\""), json!({"date": {"$lt": "2024-01-01"}}));
    assert_eq!(parse("year!=2020"), json!({"year": {"$ne": 2020}}));
    assert_eq!(parse("version=2 beta"), json!({"version": "2 beta"}));
    assert_eq!(
        parse(r#"title="a and b" and x=1"#),
        json!({"$and": [{"title": "a and b"}, {"x": 1}]})
    );
    let two = MetadataFilter::from_conditions(["year>2000", "lang=zh"]).unwrap();
    assert_eq!(
        serde_json::to_value(two).unwrap(),
        json!({"$and": [{"year": {"$gt": 2000}}, {"lang": "zh"}]})
    );
}

#[test]
fn a_bad_compact_filter_names_where_it_stopped() {
    let err = |s: &str| MetadataFilter::parse(s).unwrap_err();
    assert!(err("year>=").contains("at character 7: expected a value"), "{}", err("year>="));
    assert!(
        err("year 2020").contains("at character 6: expected an operator"),
        "{}",
        err("year 2020")
    );
    assert!(err("(a=1").contains("expected `)`"));
    assert!(err("a=\"x\" b=2").contains("at character 7: expected `and`, `or` or the end"));
    assert!(err("a=\"x").contains("not a JSON string"));
    assert!(err("lang in zh").contains("expected a list"));
    assert!(err("=3").contains("at character 1: expected a metadata key"));
    assert!(err("lang not zh").contains("expected `in` after `not`"));
}

#[test]
fn deep_wide_and_long_filters_are_refused_before_they_cost_a_stack() {
    use crate::{MAX_FILTER_CONDITIONS, MAX_FILTER_DEPTH};
    // The compact form: 20 KB of parentheses, or `not` 10,000 times, read on a small stack.
    let run = |text: String| {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || MetadataFilter::parse(&text).map(|_| ()))
            .unwrap()
            .join()
            .expect("the parser returned instead of overflowing its stack")
    };
    let parens = format!("{}lang=en{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(run(parens).unwrap_err().contains("nest more than 32 deep"));
    assert!(run(format!("{}lang=en", "not ".repeat(10_000))).unwrap_err().contains("32 deep"));
    // At the bound it reads.
    let ok = format!("{}lang=en{}", "(".repeat(MAX_FILTER_DEPTH), ")".repeat(MAX_FILTER_DEPTH));
    assert!(run(ok).is_ok());
    let wide = vec!["a=1"; MAX_FILTER_CONDITIONS + 1].join(" or ");
    assert!(run(wide).unwrap_err().contains("more than 1024 conditions"));
    let long = format!("title={}", "x".repeat(70_000));
    assert!(run(long).unwrap_err().contains("at most 65536"));
    // The JSON form: as deep as serde reads (128), or as wide as a request may be.
    let mut deep = json!({"lang": "en"});
    for _ in 0..=MAX_FILTER_DEPTH {
        deep = json!({"$not": deep});
    }
    let err = serde_json::from_value::<MetadataFilter>(deep).unwrap_err().to_string();
    assert!(err.contains("more than 32 deep"), "{err}");
    let terms: Vec<_> = (0..40_000).map(|i| json!({"k": i})).collect();
    let err = serde_json::from_value::<MetadataFilter>(json!({"$or": terms})).unwrap_err();
    assert!(err.to_string().contains("more than 1024 conditions"), "{err}");
    let values: Vec<_> = (0..10_001).collect();
    let err = serde_json::from_value::<MetadataFilter>(json!({"k": {"$in": values}})).unwrap_err();
    assert!(err.to_string().contains("more than 10000 values"), "{err}");
}
