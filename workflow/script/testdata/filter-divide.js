// The design's second example: filter, reduce, length, divide.
const orders = await mcp.shop.listOrders({ status: "paid" });
const large = orders.filter((o) => o.total > 100);
const sum = large.reduce((acc, o) => acc + o.total, 0);
const count = large.length;
const mean = sum / count;
await mcp.reports.publish({ title: "Mean large order", value: mean });
