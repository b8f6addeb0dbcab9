-- The demo catalog and users (contract §1), loaded on the first creation of the
-- embedded database and by `orders seed`. Idempotent: running it again adds
-- nothing and changes nothing.

INSERT INTO users (email, name, role) VALUES
  ('admin@example.com', 'Demo Admin', 'admin'),
  ('customer@example.com', 'Demo Customer', 'customer')
ON CONFLICT ((lower(email))) DO NOTHING;

INSERT INTO products (sku, name, price, currency) VALUES
  ('MUG-001', 'Enamel mug', 12.50, 'EUR'),
  ('MUG-002', 'Espresso cup set', 24.90, 'EUR'),
  ('TEE-001', 'Organic cotton T-shirt', 19.95, 'EUR'),
  ('TEE-002', 'Long-sleeve shirt', 29.95, 'EUR'),
  ('HAT-001', 'Wool beanie', 17.00, 'EUR'),
  ('BAG-001', 'Canvas tote bag', 14.99, 'EUR'),
  ('BAG-002', 'Waxed backpack', 89.00, 'EUR'),
  ('NB-001', 'Dotted notebook A5', 9.90, 'EUR'),
  ('NB-002', 'Linen notebook A4', 15.50, 'EUR'),
  ('PEN-001', 'Fountain pen', 42.00, 'EUR'),
  ('PEN-002', 'Ink cartridges (12)', 6.45, 'EUR'),
  ('CUP-001', 'Travel tumbler', 22.00, 'EUR'),
  ('TEA-001', 'Green tea, 100 g', 8.75, 'EUR'),
  ('COF-001', 'Coffee beans, 250 g', 11.20, 'EUR'),
  ('COF-002', 'Hand grinder', 59.90, 'EUR'),
  ('SOC-001', 'Merino socks', 16.00, 'EUR'),
  ('CAP-001', 'Baseball cap', 21.50, 'EUR'),
  ('PST-001', 'Poster 50x70', 25.00, 'EUR'),
  ('STK-001', 'Sticker pack', 4.99, 'EUR'),
  ('LMP-001', 'Desk lamp', 74.00, 'EUR'),
  ('GFT-001', 'Gift card', 50.00, 'EUR')
ON CONFLICT (sku) DO NOTHING;
