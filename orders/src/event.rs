//! One order-stream entry, as the seckill module writes it, and what it
//! means for the order row.

use std::collections::HashMap;

/// A stream entry ID, `ms-seq`, ordered as Redis orders them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct EntryId {
    pub ms: i64,
    pub seq: i64,
}

impl EntryId {
    pub fn parse(id: &str) -> Option<EntryId> {
        let (ms, seq) = id.split_once('-')?;
        Some(EntryId {
            ms: ms.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

/// What the order becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// Bought without a hold.
    Purchased,
    /// Reserved, awaiting payment.
    Held,
    Confirmed,
    Refunded,
    Expired,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Purchased => "purchased",
            Status::Held => "held",
            Status::Confirmed => "confirmed",
            Status::Refunded => "refunded",
            Status::Expired => "expired",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderEvent {
    pub entry: EntryId,
    pub status: Status,
    pub item: String,
    pub user: String,
    pub qty: i64,
    /// The order's identity: the request id, or the entry ID for a purchase
    /// made without one.
    pub order_id: String,
    pub at_ms: i64,
    pub stock: i64,
    /// A hold's deadline, Unix ms (the entry's `until`). `None` for other
    /// events, and for holds written by a module that did not send it.
    pub hold_until_ms: Option<i64>,
    /// The variant (a drop's size) the order is of, on an item with
    /// variants; `None` on an item without.
    pub variant: Option<String>,
}

impl OrderEvent {
    /// Reads an entry; an error names what is wrong with it.
    pub fn parse(id: &str, fields: &HashMap<String, String>) -> Result<OrderEvent, String> {
        let field = |name: &str| {
            fields
                .get(name)
                .ok_or_else(|| format!("entry {id} has no field {name:?}"))
        };
        let number = |name: &str| -> Result<i64, String> {
            field(name)?
                .parse()
                .map_err(|_| format!("entry {id}: field {name:?} is not an integer"))
        };
        let status = match field("event")?.as_str() {
            "purchase" => Status::Purchased,
            "hold" => Status::Held,
            "confirm" => Status::Confirmed,
            "refund" => Status::Refunded,
            "expire" => Status::Expired,
            other => return Err(format!("entry {id}: unknown event {other:?}")),
        };
        let entry = EntryId::parse(id).ok_or_else(|| format!("bad entry id {id:?}"))?;
        let request = field("request")?;
        Ok(OrderEvent {
            entry,
            status,
            item: field("item")?.clone(),
            user: field("user")?.clone(),
            qty: number("qty")?,
            order_id: if request.is_empty() {
                format!("entry:{id}")
            } else {
                request.clone()
            },
            at_ms: number("at")?,
            stock: number("stock")?,
            // Optional: an older module writes no `until`.
            hold_until_ms: match fields.get("until") {
                None => None,
                Some(_) => Some(number("until")?),
            },
            variant: fields.get("variant").cloned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn purchase() -> HashMap<String, String> {
        fields(&[
            ("event", "purchase"),
            ("item", "{sku:1}"),
            ("user", "alice"),
            ("qty", "2"),
            ("request", "order-1"),
            ("at", "1700000000000"),
            ("stock", "8"),
        ])
    }

    #[test]
    fn a_purchase_entry_becomes_a_purchased_order() {
        let event = OrderEvent::parse("1700000000000-3", &purchase()).unwrap();
        assert_eq!(event.status, Status::Purchased);
        assert_eq!(event.order_id, "order-1");
        assert_eq!(event.qty, 2);
        assert_eq!(
            event.entry,
            EntryId {
                ms: 1700000000000,
                seq: 3
            }
        );
    }

    #[test]
    fn a_purchase_without_request_id_is_keyed_by_its_entry() {
        let mut fields = purchase();
        fields.insert("request".into(), String::new());
        let event = OrderEvent::parse("5-0", &fields).unwrap();
        assert_eq!(event.order_id, "entry:5-0");
    }

    #[test]
    fn damaged_entries_are_refused_with_a_reason() {
        let mut bad_qty = purchase();
        bad_qty.insert("qty".into(), "two".into());
        assert!(OrderEvent::parse("1-0", &bad_qty)
            .unwrap_err()
            .contains("qty"));
        let mut unknown = purchase();
        unknown.insert("event".into(), "teleport".into());
        assert!(OrderEvent::parse("1-0", &unknown).is_err());
        assert!(OrderEvent::parse("1-0", &fields(&[("event", "purchase")])).is_err());
        assert!(OrderEvent::parse("nonsense", &purchase()).is_err());
    }

    #[test]
    fn a_hold_reads_its_deadline_when_the_entry_has_one() {
        let mut hold = purchase();
        hold.insert("event".into(), "hold".into());
        let old = OrderEvent::parse("1-0", &hold).unwrap();
        assert_eq!((old.status, old.hold_until_ms), (Status::Held, None));
        hold.insert("until".into(), "4102444800000".into());
        let new = OrderEvent::parse("1-0", &hold).unwrap();
        assert_eq!(new.hold_until_ms, Some(4102444800000));
        hold.insert("until".into(), "soon".into());
        assert!(OrderEvent::parse("1-0", &hold)
            .unwrap_err()
            .contains("until"));
    }

    #[test]
    fn an_entry_of_a_variant_names_it() {
        assert_eq!(OrderEvent::parse("1-0", &purchase()).unwrap().variant, None);
        let mut sized = purchase();
        sized.insert("variant".into(), "43".into());
        let event = OrderEvent::parse("1-0", &sized).unwrap();
        assert_eq!(event.variant.as_deref(), Some("43"));
    }

    #[test]
    fn entry_ids_order_like_redis() {
        assert!(EntryId::parse("10-0") > EntryId::parse("9-99"));
        assert!(EntryId::parse("10-2") > EntryId::parse("10-1"));
    }
}
