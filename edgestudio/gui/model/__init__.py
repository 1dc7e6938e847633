"""The model's views: summary and cost, the graph, node properties, Compare, Netron."""
