public import GRDB
public import HearthCore

extension QueryInterfaceRequest {
    /// One page of a list ordered by (`column`, `id`): the rows after `cursor` (none: from the
    /// start), at most `limit` of them. Rows written meanwhile never shift a page.
    public func page(orderedBy column: String, descending: Bool, after cursor: PageCursor?, limit: Int) -> Self {
        var request = self
        if let cursor {
            request = request.filter(
                sql: "(\(column), id) \(descending ? "<" : ">") (?, ?)",
                arguments: [cursor.time, cursor.id]
            )
        }
        let (time, id) = (Column(column), Column("id"))
        return request.order(descending ? [time.desc, id.desc] : [time.asc, id.asc]).limit(limit)
    }
}
